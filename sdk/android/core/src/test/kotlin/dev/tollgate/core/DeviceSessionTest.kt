package dev.tollgate.core

import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.security.KeyPair
import java.security.KeyPairGenerator
import java.security.Signature
import java.security.spec.ECGenParameterSpec

/**
 * [DeviceSession] with a scripted gateway ([ScriptedTransport]) and an attestor holding a real (software) EC P-256 key,
 * signing as the Android Keystore key does. Proves the lifecycle rules of protocol.md "Errors": no new key after
 * `device_revoked`, refresh with the existing key, a new key only after `device_key_unknown`.
 */
class DeviceSessionTest {
    private var now = 1_764_000_000_000L
    private val appToken = "at_0123456789abcdefghijABCDEFGHIJkl"

    /** The Android attestor's steps, with a software key instead of the Keystore. */
    private inner class SoftwareKeyAttestor : Attestor {
        var key: KeyPair? = null
        var newKeys = 0
        var refreshes = 0

        override suspend fun refresh(api: AttestationApi): DeviceToken? {
            val pair = key ?: return null
            refreshes += 1
            val challenge = api.challenge().value
            val signature = Signature.getInstance("SHA256withECDSA").run {
                initSign(pair.private)
                update(Proofs.refreshMessage(challenge))
                sign()
            }
            return api.exchange("android-key-attestation", AttestationBodies.keyRefresh(challenge, Proofs.keyId(pair.public.encoded), signature))
        }

        override suspend fun attestNewKey(api: AttestationApi): DeviceToken {
            val challenge = api.challenge().value
            newKeys += 1
            val pair = KeyPairGenerator.getInstance("EC").apply { initialize(ECGenParameterSpec("secp256r1")) }.generateKeyPair()
            key = pair
            return api.exchange("android-key-attestation", AttestationBodies.keyAttestation(challenge, listOf(pair.public.encoded)))
        }

        override suspend fun sign(digest: ByteArray): ByteArray? {
            val pair = key ?: return null
            return Signature.getInstance("SHA256withECDSA").run {
                initSign(pair.private)
                update(digest)
                sign()
            }
        }
    }

    /** A gateway: challenges, attestation answers (token-1, token-2, …) and proxy answers from [proxy]. */
    private inner class Gateway(
        val attest: (JsonObject) -> Triple<Int, List<Pair<String, String>>, String>? = { null },
        val proxy: (HttpCall, Int) -> Triple<Int, List<Pair<String, String>>, String>,
    ) {
        var tokens = 0
        var proxied = 0
        val exchanges = ArrayList<JsonObject>()
        val transport = ScriptedTransport { call ->
            val path = call.url.removePrefix(ScriptedTransport.BASE)
            when {
                path == "/v1/attest/challenge" -> Triple(200, JSON, """{"challenge":"Y2hhbGxlbmdlLTAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtbm8","expiresAt":"2025-11-24T16:05:00.000Z"}""")
                path.startsWith("/v1/attest/") -> {
                    val body = Json.parseToJsonElement(call.body.toString(Charsets.UTF_8)) as JsonObject
                    exchanges.add(body)
                    attest(body) ?: run {
                        tokens += 1
                        Triple(200, JSON, """{"deviceToken":"token-$tokens","expiresAt":"${java.time.Instant.ofEpochMilli(now + 3_600_000)}","deviceId":"dev-1"}""")
                    }
                }
                else -> proxy(call, ++proxied)
            }
        }
        val api = AttestationApi(ScriptedTransport.BASE, appToken, "android/1.2.0", transport, clock = { now })
    }

    private fun refusal(reason: String?, type: String = "attestationFailed", status: Int = 403) = Triple(
        status,
        listOf("Tollgate-Error" to type, "Content-Type" to "application/json"),
        """{"error":{"type":"$type"${reason?.let { ",\"reason\":\"$it\"" } ?: ""},"message":"Refused.","requestId":"req_1"}}""",
    )

    private val ok = Triple(200, listOf("Content-Type" to "application/json"), """{"ok":true}""")

    private fun client(gateway: Gateway, session: DeviceSession) =
        TollgateClient(ScriptedTransport.BASE, appToken, session, gateway.transport, clock = { now })

    @Test
    fun `device_revoked on a call - attestationFailed surfaced, no new key, no refresh until a new session`() = runBlocking {
        val gateway = Gateway(proxy = { _, _ -> refusal("device_revoked") })
        val attestor = SoftwareKeyAttestor()
        val store = MemoryStore()
        val session = DeviceSession(gateway.api, attestor, store, clock = { now })
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { client(gateway, session).request("GET", "openai/v1/models") } }
        assertEquals("device_revoked", error.reason)
        assertEquals(1, attestor.newKeys, "only the first key")
        assertEquals(0, attestor.refreshes)
        assertEquals(1, gateway.proxied, "not retried")
        assertTrue(session.isRevoked)
        assertNull(store.saved, "the revoked token is dropped")

        // Every later call fails at once: nothing on the wire, no key, no refresh — even when the token is long expired.
        val callsBefore = gateway.transport.calls.size
        now += 7_200_000
        repeat(3) {
            val again = assertThrows<TollgateError.AttestationFailed> { runBlocking { client(gateway, session).request("GET", "openai/v1/models") } }
            assertEquals("device_revoked", again.reason)
        }
        assertThrows<TollgateError.AttestationFailed> { runBlocking { session.current(forceRefresh = true) } }
        assertEquals(callsBefore, gateway.transport.calls.size)
        assertEquals(1, attestor.newKeys)
        assertEquals(0, attestor.refreshes)
        session.clear()
        assertThrows<TollgateError.AttestationFailed> { runBlocking { session.deviceToken() } }
        assertEquals(1, attestor.newKeys)

        // After a restart (a new session over the same key), a refresh uses the existing key: the gateway refuses it
        // again, and still no new key is made.
        val restarted = Gateway(attest = { body -> if (body.containsKey("signature")) refusal("device_revoked") else null }, proxy = { _, _ -> ok })
        val next = DeviceSession(restarted.api, attestor, store, clock = { now })
        val onRefresh = assertThrows<TollgateError.AttestationFailed> { runBlocking { next.deviceToken() } }
        assertEquals("device_revoked", onRefresh.reason)
        assertEquals(1, attestor.newKeys)
        assertEquals(1, attestor.refreshes)
        assertEquals(listOf("/v1/attest/challenge", "/v1/attest/android-key-attestation"), restarted.transport.paths())
        assertThrows<TollgateError.AttestationFailed> { runBlocking { next.deviceToken() } }
        assertEquals(2, restarted.transport.calls.size)

        // A session that replaces a revoked one in the same process (Tollgate.initialize again) starts stopped.
        val replaced = DeviceSession(restarted.api, attestor, store, clock = { now }, revoked = true)
        assertEquals("device_revoked", assertThrows<TollgateError.AttestationFailed> { runBlocking { replaced.current(forceRefresh = true) } }.reason)
        assertEquals(2, restarted.transport.calls.size)
        assertEquals(1, attestor.newKeys)
    }

    @Test
    fun `device_token_expired refreshes with the existing key and retries once`() = runBlocking {
        val gateway = Gateway(proxy = { call, n ->
            val token = call.headers.first { it.first == "Tollgate-Device-Token" }.second
            if (n == 1) refusal("device_token_expired") else if (token == "token-2") ok else refusal("device_token_invalid")
        })
        val attestor = SoftwareKeyAttestor()
        val session = DeviceSession(gateway.api, attestor, MemoryStore(), clock = { now })
        assertEquals("""{"ok":true}""", client(gateway, session).request("GET", "openai/v1/models").text)
        assertEquals(1, attestor.newKeys)
        assertEquals(1, attestor.refreshes)
        val refresh = gateway.exchanges.last()
        assertEquals(Proofs.keyId(attestor.key!!.public.encoded), refresh["keyId"]!!.jsonPrimitive.content)
        assertTrue(refresh.containsKey("signature"))
        assertFalse(refresh.containsKey("chain"), "a refresh sends no new chain")
    }

    @Test
    fun `device_key_unknown on a refresh attests a new key once`() = runBlocking {
        val gateway = Gateway(attest = { body -> if (body.containsKey("signature")) refusal("device_key_unknown") else null }, proxy = { _, _ -> ok })
        val attestor = SoftwareKeyAttestor()
        val store = MemoryStore()
        val session = DeviceSession(gateway.api, attestor, store, clock = { now })
        assertEquals("token-1", session.deviceToken())
        now += 3_600_000
        assertEquals("token-2", session.deviceToken())
        assertEquals(2, attestor.newKeys)
        assertEquals(1, attestor.refreshes)
        assertEquals("token-2", store.saved?.token)
        assertEquals("dev-1", store.saved?.deviceId)
    }

    @Test
    fun `a stored token that is not due is used without any attestation (cold start)`() = runBlocking {
        val gateway = Gateway(proxy = { _, _ -> ok })
        val attestor = SoftwareKeyAttestor()
        val store = MemoryStore(DeviceToken("stored", now + 3_600_000, now - 60_000, "dev-9"))
        val session = DeviceSession(gateway.api, attestor, store, clock = { now })
        client(gateway, session).request("GET", "openai/v1/models")
        assertEquals(listOf("/v1/proxy/openai/v1/models"), gateway.transport.paths())
        assertEquals("stored", gateway.transport.calls.single().headers.first { it.first == "Tollgate-Device-Token" }.second)
        assertEquals(0, attestor.newKeys + attestor.refreshes)
    }

    @Test
    fun `assertion_required turns a per-request signature over the digest on`() = runBlocking {
        val gateway = Gateway(proxy = { call, _ -> if (call.headers.any { it.first == "Tollgate-Assertion" }) ok else refusal("assertion_required") })
        val attestor = SoftwareKeyAttestor()
        val session = DeviceSession(gateway.api, attestor, clock = { now })
        client(gateway, session).request("POST", "openai/v1/chat/completions", RequestBody.Text("{}"))
        assertTrue(session.assertionsRequired)
        val sent = gateway.transport.calls.last()
        val header = sent.headers.first { it.first == "Tollgate-Assertion" }.second
        val built = RequestBuilder(ScriptedTransport.BASE, appToken, TollgateClient.DEFAULT_SDK)
            .build(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text("{}")), "token-1", now)
        val valid = Signature.getInstance("SHA256withECDSA").run {
            initVerify(attestor.key!!.public)
            update(Digest.unhex(built.digest))
            verify(java.util.Base64.getUrlDecoder().decode(header))
        }
        assertTrue(valid, "the assertion is the key's signature over the request digest")
        assertEquals(1, attestor.newKeys)
        // The next request carries one from the start.
        client(gateway, session).request("GET", "openai/v1/models")
        assertTrue(gateway.transport.calls.last().headers.any { it.first == "Tollgate-Assertion" })
    }

    @Test
    fun `an error other than attestationFailed never touches the device token`() = runBlocking {
        val gateway = Gateway(proxy = { _, _ -> refusal("app_token_unknown", "unauthorized", 401) })
        val attestor = SoftwareKeyAttestor()
        val session = DeviceSession(gateway.api, attestor, clock = { now })
        val error = assertThrows<TollgateError.Unauthorized> { runBlocking { client(gateway, session).request("GET", "openai/v1/models") } }
        assertEquals("app_token_unknown", error.reason)
        assertEquals(1, gateway.proxied)
        assertEquals("token-1", session.deviceToken())
        assertEquals(1, attestor.newKeys)
    }

    @Test
    fun `concurrent callers share one attestation`() = runBlocking {
        val gateway = Gateway(proxy = { _, _ -> ok })
        val attestor = SoftwareKeyAttestor()
        val session = DeviceSession(gateway.api, attestor, clock = { now })
        val tokens = (1..8).map { async { session.deviceToken() } }.awaitAll()
        assertEquals(setOf("token-1"), tokens.toSet())
        assertEquals(1, attestor.newKeys)
    }

    @Test
    fun `a token without a readable expiry is used once and never stored`() = runBlocking {
        val gateway = Gateway(attest = { Triple(200, JSON, """{"deviceToken":"opaque","deviceId":"d"}""") }, proxy = { _, _ -> ok })
        val store = MemoryStore()
        val session = DeviceSession(gateway.api, SoftwareKeyAttestor(), store, clock = { now })
        assertEquals("opaque", session.deviceToken())
        assertNull(store.saved)
    }

    private companion object {
        val JSON = listOf("Content-Type" to "application/json")
    }
}
