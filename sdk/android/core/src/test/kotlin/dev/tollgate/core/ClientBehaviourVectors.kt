package dev.tollgate.core

import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.fail
import java.io.ByteArrayInputStream

/** A transport that records every call and answers from a script; nothing goes on a network. */
class ScriptedTransport(private val answer: (HttpCall) -> Triple<Int, List<Pair<String, String>>, String>) : HttpTransport {
    val calls = ArrayList<HttpCall>()

    override suspend fun execute(call: HttpCall): HttpResult {
        synchronized(calls) { calls.add(call) }
        val (status, headers, body) = answer(call)
        return HttpResult(status, Headers.of(headers), ByteArrayInputStream(body.toByteArray(Charsets.UTF_8)))
    }

    fun paths(base: String = BASE): List<String> = synchronized(calls) { calls.map { it.url.removePrefix(base) } }

    companion object {
        const val BASE = "https://gateway.test"
    }
}

/** sdk/conformance/client-behaviour.json: one runner per `rule`; an unknown rule fails. */
class ClientBehaviourVectors(private val constants: JsonObject) {
    fun run(vector: JsonObject) {
        val input = vector["input"]?.jsonObject ?: fail("missing input")
        val expected = vector["expected"]?.jsonObject ?: fail("missing expected")
        when (val rule = vector["rule"]?.jsonPrimitive?.content ?: fail("missing rule")) {
            "assertion-encoding" -> assertionEncoding(input, expected)
            "attestation-request" -> attestationRequest(input, expected)
            "attestation-response" -> attestationResponse(input, expected)
            "token-expiry" -> tokenExpiry(input, expected)
            "refresh-due" -> refreshDue(input, expected)
            "stream-format" -> streamFormat(input, expected)
            "retry" -> retry(input, expected)
            "not-initialized" -> notInitialized(input, expected)
            "reason-action" -> reasonAction(input, expected)
            else -> fail("unknown rule \"$rule\"")
        }
    }

    private fun assertionEncoding(input: JsonObject, expected: JsonObject) {
        val bytes = Digest.unhex(input.str("bytesHex"))
        if (expected.containsKey("error")) {
            assertEquals("invalidRequest", expected.str("error"))
            val error = runCatching { Proofs.assertionHeader(bytes) }.exceptionOrNull()
            assertTrue(error is TollgateError.InvalidRequest, "expected invalidRequest, got $error")
            return
        }
        assertEquals(expected.str("header"), Proofs.assertionHeader(bytes))
    }

    private fun attestationRequest(input: JsonObject, expected: JsonObject) = runBlocking {
        val fields = input["fields"]!!.jsonObject
        val transport = ScriptedTransport { call ->
            if (call.url.endsWith("/challenge")) {
                Triple(200, listOf("Content-Type" to "application/json"), """{"challenge":"q1w2e3r4t5y6u7i8o9p0AaSsDdFfGgHhJjKkLlZzXx-_","expiresAt":"2025-11-24T16:05:00.000Z"}""")
            } else {
                Triple(200, listOf("Content-Type" to "application/json"), """{"deviceToken":"a.b.c","expiresAt":"2025-11-24T17:00:00.000Z","deviceId":"d1"}""")
            }
        }
        val api = AttestationApi(ScriptedTransport.BASE, input.str("appToken"), "android/1.2.0", transport, clock = { 1_764_000_000_000 })
        val method = input.str("method")
        val refresh = fields["refresh"]?.jsonPrimitive?.booleanOrNull == true
        when (method) {
            "challenge" -> api.challenge()
            "android-key-attestation" -> {
                val challenge = fields.str("challenge")
                if (refresh) {
                    assertEquals(expected.str("signedMessageHex"), Digest.hex(Proofs.refreshMessage(challenge)), "signedMessageHex")
                    api.exchange(method, AttestationBodies.keyRefresh(challenge, fields.str("keyId"), Digest.unhex(fields.str("proofHex"))))
                } else {
                    assertEquals(expected.str("attestationChallengeHex"), Digest.hex(Proofs.keyAttestationChallenge(challenge)), "attestationChallengeHex")
                    api.exchange(method, AttestationBodies.keyAttestation(challenge, fields["chainHex"]!!.jsonArray.map { Digest.unhex(it.jsonPrimitive.content) }))
                }
            }
            "android-play-integrity" -> {
                val challenge = fields.str("challenge")
                val deviceId = fields.str("deviceId")
                val binding = Proofs.playIntegrityRequestHash(challenge, deviceId)
                when (val type = fields.str("type")) {
                    "standard" -> assertEquals(expected.str("requestHash"), binding, "requestHash")
                    "classic" -> assertEquals(expected.str("nonce"), binding, "nonce")
                    else -> fail("unknown Play Integrity type $type")
                }
                api.exchange(method, AttestationBodies.playIntegrity(challenge, fields.str("integrityToken"), deviceId, fields.str("type")))
            }
            "development" -> api.exchange(method, AttestationBodies.development(fields.str("developmentToken"), fields.str("deviceId")))
            "apple-app-attest" -> {
                val challenge = fields.str("challenge")
                assertEquals(expected.str("clientDataHashHex"), Digest.sha256Hex(challenge.toByteArray(Charsets.UTF_8)), "clientDataHashHex")
                val proof = Digest.unhex(fields.str("proofHex"))
                api.exchange(method, AttestationBodies.appleAppAttest(fields.str("keyId"), challenge, attestation = proof.takeIf { !refresh }, assertion = proof.takeIf { refresh }))
            }
            else -> fail("unknown attestation method \"$method\"")
        }
        // One challenge per exchange: the call under test is the last (and, for a challenge, the only) one.
        assertEquals(1, transport.calls.size, "one call per exchange, the challenge is fetched by the attestor")
        val call = transport.calls.single()
        assertEquals(expected.str("method"), call.method, "method")
        assertEquals(expected.str("path"), call.url.removePrefix(ScriptedTransport.BASE), "path")
        val expectedHeaders = expected["headers"]!!.jsonArray.map { it.jsonArray[0].jsonPrimitive.content.lowercase() to it.jsonArray[1].jsonPrimitive.content }.toSet()
        assertEquals(expectedHeaders, call.headers.map { it.first.lowercase() to it.second }.toSet(), "headers")
        assertEquals(call.headers.size, call.headers.map { it.first.lowercase() }.toSet().size, "duplicate header names")
        val body = expected["body"]!!
        if (body is JsonNull) {
            assertEquals(0, call.body.size, "no body")
        } else {
            assertEquals(body, Json.parseToJsonElement(call.body.toString(Charsets.UTF_8)), "body")
        }
    }

    private fun attestationResponse(input: JsonObject, expected: JsonObject) = runBlocking {
        val transport = ScriptedTransport { Triple(input["status"]!!.jsonPrimitive.int, listOf("Content-Type" to "application/json"), input.str("body")) }
        val api = AttestationApi(ScriptedTransport.BASE, "at_0123456789abcdefghijABCDEFGHIJkl", "android/1.2.0", transport, clock = { input["receivedAtMs"]!!.jsonPrimitive.long })
        val outcome = runCatching { api.exchange("development", AttestationBodies.development("dt_x", "sim-0001")) }
        if (expected.containsKey("error")) {
            assertEquals(expected.str("error"), (outcome.exceptionOrNull() as? TollgateError)?.kind, "error kind, got $outcome")
            return@runBlocking
        }
        val token = outcome.getOrThrow()
        assertEquals(expected.str("deviceToken"), token.token)
        assertEquals(expected.str("deviceId"), token.deviceId)
        assertEquals(expected["expiresAtMs"]!!.jsonPrimitive.long, token.expiresAtMs)
        // The same through the parser the bridges use.
        assertEquals(token.expiresAtMs, AttestationApi.parseAnswer(input.str("body"), input["receivedAtMs"]!!.jsonPrimitive.long).expiresAtMs)
    }

    private fun tokenExpiry(input: JsonObject, expected: JsonObject) {
        val expiresAt = input["expiresAt"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.content }
        assertEquals(
            expected["expiresAtMs"]!!.jsonPrimitive.long,
            TokenExpiry.expiresAtMs(input.str("deviceToken"), expiresAt, input["receivedAtMs"]!!.jsonPrimitive.long),
        )
    }

    private fun refreshDue(input: JsonObject, expected: JsonObject) {
        assertEquals(constants["refreshMarginMs"]!!.jsonPrimitive.long, TokenExpiry.REFRESH_MARGIN_MS, "refreshMarginMs")
        val received = input["receivedAtMs"]!!.jsonPrimitive.long
        val expires = input["expiresAtMs"]!!.jsonPrimitive.long
        val now = input["nowMs"]!!.jsonPrimitive.long
        val due = expected["refresh"]!!.jsonPrimitive.boolean
        assertEquals(due, TokenExpiry.refreshDue(received, expires, now), "refreshDue")
        // And the session itself: a stored token is reused exactly when it is not due.
        runBlocking {
            var refreshes = 0
            val attestor = object : Attestor {
                override suspend fun refresh(api: AttestationApi): DeviceToken {
                    refreshes += 1
                    return DeviceToken("fresh", now + 3_600_000, now)
                }

                override suspend fun attestNewKey(api: AttestationApi): DeviceToken = fail("no new key")
                override suspend fun sign(digest: ByteArray): ByteArray? = null
            }
            val store = MemoryStore(DeviceToken("stored", expires, received))
            val session = DeviceSession(AttestationApi(ScriptedTransport.BASE, "at_x", "android/1.2.0", ScriptedTransport { fail("no call") }), attestor, store, clock = { now })
            assertEquals(if (due) "fresh" else "stored", session.deviceToken())
            assertEquals(if (due) 1 else 0, refreshes)
        }
    }

    private fun streamFormat(input: JsonObject, expected: JsonObject) {
        val contentType = input["contentType"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.content }
        val format = StreamFormat.fromContentType(contentType)
        assertEquals(expected.str("format"), format.wireName)
        // And the client: a stream without a named format parses by the response's Content-Type.
        runBlocking {
            val body = when (format) {
                StreamFormat.SSE -> "data: x\n\n"
                StreamFormat.NDJSON -> "{\"a\":1}\n"
                StreamFormat.JSON_ARRAY -> "[{\"a\":1}]"
                StreamFormat.RAW -> "data: x\n\n"
            }
            val transport = ScriptedTransport { Triple(200, listOfNotNull(contentType?.let { "Content-Type" to it }), body) }
            val client = TollgateClient(ScriptedTransport.BASE, "at_x", StaticDeviceToken("dt"), transport)
            val events = client.stream(TollgateRequest("POST", "openai/v1/chat/completions")).toList()
            val first = events.first()
            when (format) {
                StreamFormat.SSE -> assertEquals(StreamEvent.Sse("message", "x"), first)
                StreamFormat.NDJSON, StreamFormat.JSON_ARRAY -> assertTrue(first is StreamEvent.Json, "json event")
                StreamFormat.RAW -> assertTrue(first is StreamEvent.Bytes, "raw bytes")
            }
        }
    }

    private fun retry(input: JsonObject, expected: JsonObject) {
        val defaults = constants["retryDefaults"]!!.jsonObject
        assertEquals(defaults["maxRetries"]!!.jsonPrimitive.int, RetryOptions().maxRetries, "maxRetries default")
        assertEquals(defaults["maxWaitSeconds"]!!.jsonPrimitive.long, RetryOptions().maxWaitSeconds, "maxWaitSeconds default")
        val options = input["options"]!!.let {
            if (it is JsonNull) null else RetryOptions(it.jsonObject["maxRetries"]!!.jsonPrimitive.int, it.jsonObject["maxWaitSeconds"]!!.jsonPrimitive.long)
        }
        val retryAfter = input["retryAfterSeconds"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.long }
        val delay = RetryOptions.delaySeconds(options, input.str("errorKind"), retryAfter, input["retriesDone"]!!.jsonPrimitive.int, input["waitedSeconds"]!!.jsonPrimitive.long)
        assertEquals(expected["retry"]!!.jsonPrimitive.boolean, delay != null, "retry")
        val expectedDelay = expected["delaySeconds"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.long }
        assertEquals(expectedDelay, delay, "delaySeconds")
    }

    private fun notInitialized(input: JsonObject, expected: JsonObject) {
        val holder = Initialization<TollgateClient>()
        when (val state = input.str("state")) {
            "not-initialized" -> Unit
            "no-gateway-url" -> holder.gatewayUrlMissing()
            else -> fail("unknown state \"$state\"")
        }
        val error = runCatching {
            when (val call = input.str("call")) {
                "request" -> runBlocking { holder.get().request("GET", "openai/v1/models") }
                "stream" -> holder.get().stream(TollgateRequest("GET", "openai/v1/models"))
                else -> fail("unknown call \"$call\"")
            }
        }.exceptionOrNull()
        assertTrue(error is TollgateError, "a TollgateError, got $error")
        assertEquals(expected.str("kind"), (error as TollgateError).kind)
        assertTrue(error is TollgateError.InvalidRequest)
        assertEquals(expected.str("reason"), error.reason)
    }

    private fun reasonAction(input: JsonObject, expected: JsonObject) {
        val reason = input["reason"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.content }
        // The error as the client sees it, from the response the vector describes.
        val body = """{"error":{"type":"${input.str("errorType")}"${reason?.let { ",\"reason\":\"$it\"" } ?: ""},"message":"m","requestId":"r"}}"""
        val error = ErrorMapper.map(input["status"]!!.jsonPrimitive.int, Headers.of(listOf("Tollgate-Error" to input.str("errorType"))), body.toByteArray(), 0)!!
        val action = ReasonAction.of(error)
        assertEquals(expected.str("action"), action.wireName, "action")
        assertEquals(expected["retryOnce"]!!.jsonPrimitive.boolean, action.retryOnce, "retryOnce")
        assertEquals(expected["newKey"]!!.jsonPrimitive.boolean, action.newKey, "newKey")
        when (val during = input["during"]?.jsonPrimitive?.content) {
            null -> Unit
            "refresh" -> runBlocking { duringRefresh(error, action) }
            else -> fail("unknown during \"$during\"")
        }
    }

    /** A refresh refused with [error]: the session stops, attests a new key, or surfaces it, as [action] says. */
    private suspend fun duringRefresh(error: TollgateError, action: ReasonAction) {
        var newKeys = 0
        val attestor = object : Attestor {
            override suspend fun refresh(api: AttestationApi): DeviceToken = throw error
            override suspend fun attestNewKey(api: AttestationApi): DeviceToken {
                newKeys += 1
                return DeviceToken("new", 3_600_000, 0)
            }

            override suspend fun sign(digest: ByteArray): ByteArray? = null
        }
        val session = DeviceSession(AttestationApi(ScriptedTransport.BASE, "at_x", "android/1.2.0", ScriptedTransport { fail("no call") }), attestor, clock = { 0 })
        val outcome = runCatching { session.deviceToken() }
        when (action) {
            ReasonAction.STOP -> {
                assertEquals(0, newKeys)
                assertTrue(session.isRevoked)
                assertEquals("device_revoked", (runCatching { session.deviceToken() }.exceptionOrNull() as TollgateError).reason)
            }
            ReasonAction.ATTEST -> {
                assertEquals(1, newKeys)
                assertEquals("new", outcome.getOrThrow())
            }
            else -> assertNull(outcome.getOrNull())
        }
    }

    private fun JsonObject.str(name: String): String {
        val value = this[name] ?: fail("missing field \"$name\"")
        if (value !is JsonPrimitive || !value.isString) fail("field \"$name\" is not a string")
        return value.content
    }

    @Suppress("unused")
    private fun JsonElement.isNull() = this is JsonNull
}

/** A [DeviceTokenStore] in memory. */
class MemoryStore(var saved: DeviceToken? = null) : DeviceTokenStore {
    var saves = 0
    override fun load(): DeviceToken? = saved
    override fun save(token: DeviceToken?) {
        saves += 1
        saved = token
    }
}
