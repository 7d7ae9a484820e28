package dev.tollgate.core

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.fail

/**
 * The vectors of realtime-close-codes.json, subprotocols.json, user-token.json and me.json (sdk/conformance/README.md,
 * last four sections). Each is asserted on the SDK's own function and, where the rule is about what crosses the wire,
 * through a [TollgateClient] whose transport records what was sent.
 */
object ProtocolVectors {
    private const val BASE = "https://gateway.example.com"
    private const val APP_TOKEN = "at_0123456789abcdefghijABCDEFGHIJkl"

    // ---- realtime-close-codes.json ----

    fun realtimeClose(vector: JsonObject) {
        val input = vector.obj("input")
        val close = RealtimeClose(input["code"]!!.jsonPrimitive.int, input.str("reason"))
        val expected = vector["expected"] ?: fail("missing field \"expected\"")
        if (expected is JsonNull) {
            assertNull(close.kind, "a normal end")
            assertNull(close.error(), "a normal end")
            return
        }
        val fields = expected.jsonObject
        assertEquals(fields.str("kind"), close.kind, "kind")
        assertEquals(fields.strOrNull("errorType"), close.errorType, "errorType")
        assertEquals(fields["closeCode"]!!.jsonPrimitive.int, close.code, "closeCode")
        assertEquals(fields.strOrNull("reason"), close.errorReason, "reason")
        assertEquals(fields.str("message"), close.message, "message")
        assertEquals(fields.str("action"), close.action.wireName, "action")
        assertEquals(fields["mayReconnect"]!!.jsonPrimitive.boolean, close.mayReconnect, "mayReconnect")
        assertEquals(fields["newKey"]!!.jsonPrimitive.boolean, close.newKey, "newKey")
        // The error the message stream ends with carries the same.
        val error = close.error() ?: fail("no error for ${close.code}")
        assertEquals(fields.str("kind"), error.kind, "error kind")
        assertEquals(close.code, error.closeCode, "error closeCode")
        assertEquals(close.mayReconnect, error.mayReconnect, "error mayReconnect")
        if (error is TollgateError.ProviderError) {
            assertEquals(close.code, error.status, "provider close code as status")
            assertEquals(fields.str("message"), error.body, "provider close reason as body")
        } else {
            assertEquals(fields.strOrNull("reason"), error.reason, "error reason")
            assertEquals(fields.strOrNull("errorType"), error.errorType, "error errorType")
        }
    }

    // ---- subprotocols.json ----

    fun subprotocols(vector: JsonObject) {
        val input = vector.obj("input")
        val expected = vector.obj("expected")
        val appToken = input.str("appToken")
        val mode = when (input.str("mode")) {
            "headers" -> UpgradeMode.HEADERS
            "subprotocols" -> UpgradeMode.SUBPROTOCOLS
            else -> fail("unknown mode ${input.str("mode")}")
        }
        val build = {
            RealtimeUpgrade.build(
                RequestBuilder(input.str("baseUrl"), appToken, input.str("sdk")),
                appToken,
                input.str("endpoint"),
                mode,
                input.str("deviceToken"),
                input.strOrNull("userToken"),
                input["requestTimeMs"]!!.jsonPrimitive.long,
                input["providerProtocols"]!!.jsonArray.map { it.jsonPrimitive.content },
            )
        }
        if (expected.containsKey("error")) {
            assertEquals("invalidRequest", expected.str("error"))
            assertThrows<TollgateError.InvalidRequest> { build() }
            return
        }
        val built = build()
        assertEquals(expected.str("url"), built.url, "url")
        assertEquals(expected.str("pathWithQuery"), built.pathWithQuery, "pathWithQuery")
        val headers = built.headers.associate { it.first.lowercase() to it.second }
        assertEquals(built.headers.size, headers.size, "duplicate header names")
        assertEquals(expected.obj("headers").entries.associate { it.key.lowercase() to it.value.jsonPrimitive.content }, headers, "headers")
        assertEquals(expected["protocols"]!!.jsonArray.map { it.jsonPrimitive.content }, built.protocols, "protocols")
        assertEquals(expected.strOrNull("secWebSocketProtocol"), built.secWebSocketProtocol, "secWebSocketProtocol")
        if (expected.containsKey("digest")) {
            assertEquals(expected.str("canonicalRequest"), built.canonicalRequest, "canonicalRequest")
            assertEquals(expected.str("digest"), built.digest, "digest")
        }
    }

    // ---- user-token.json ----

    /** A device token source that counts what the client asked of it: a user-token answer never touches the device. */
    private class CountingDeviceTokens : DeviceTokenSource {
        val actions = ArrayList<ReasonAction>()
        override suspend fun deviceToken(): String = "e30.e30.c2ln"
        override suspend fun report(token: String?, error: TollgateError): ReasonAction = ReasonAction.of(error).also { actions.add(it) }
    }

    private fun gatewayError(status: Int, type: String, reason: String?): Triple<Int, List<Pair<String, String>>, String> {
        val reasonField = reason?.let { ""","reason":"$it"""" } ?: ""
        return Triple(
            status,
            listOf("Tollgate-Error" to type, "Content-Type" to "application/json"),
            """{"error":{"type":"$type"$reasonField,"message":"refused","requestId":"req_1"}}""",
        )
    }

    fun userToken(vector: JsonObject) = runBlocking {
        val input = vector.obj("input")
        val expected = vector.obj("expected")
        val nowMs = input["nowMs"]!!.jsonPrimitive.long
        val answers = ArrayDeque(input["answers"]!!.jsonArray.map { it.jsonObject })
        val transport = ScriptedTransport { call ->
            assertFalse(call.url.contains("/v1/attest/"), "no attestation")
            val answer = answers.removeFirstOrNull() ?: fail("more requests than answers")
            val status = answer["status"]!!.jsonPrimitive.int
            if (status == 200) Triple(200, listOf("Content-Type" to "application/json"), "{}")
            else gatewayError(status, answer.str("errorType"), answer.strOrNull("reason"))
        }
        val devices = CountingDeviceTokens()
        val client = TollgateClient(BASE, APP_TOKEN, devices, transport, clock = { nowMs })
        val forced = ArrayList<Boolean>()
        val results = input["callbackResults"] ?: fail("missing field \"callbackResults\"")
        if (results is JsonArray) {
            val queue = ArrayDeque(results.toList())
            client.setUserTokenProvider { forceRefresh ->
                forced.add(forceRefresh)
                when (val next = queue.removeFirstOrNull() ?: fail("the callback was called more often than the vector allows")) {
                    is JsonNull -> null
                    is JsonObject -> throw IllegalStateException(next.str("throws"))
                    else -> next.jsonPrimitive.content
                }
            }
        }
        input.strOrNull("cached")?.let { client.userTokens.prime(it) }
        var outcome: TollgateError? = null
        repeat(input["requests"]!!.jsonPrimitive.int) {
            if (outcome != null) return@repeat
            try {
                client.request(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text("{}")))
            } catch (error: TollgateError) {
                outcome = error
            }
        }
        assertEquals(expected["callbackCalls"]!!.jsonPrimitive.int, forced.size, "callback calls")
        assertEquals(expected["callbackForced"]!!.jsonArray.map { it.jsonPrimitive.boolean }, forced, "forced")
        val sent = transport.calls.map { call -> call.headers.firstOrNull { it.first.equals("Tollgate-User-Token", ignoreCase = true) }?.second }
        assertEquals(expected["sentUserTokens"]!!.jsonArray.map { (it as? JsonPrimitive)?.takeIf { p -> p.isString }?.content }, sent, "Tollgate-User-Token sent")
        val want = expected["outcome"]!!
        if (want is JsonNull) {
            assertNull(outcome, outcome?.message)
        } else {
            val error = outcome ?: fail("expected ${want.jsonObject.str("kind")}, every call succeeded")
            assertEquals(want.jsonObject.str("kind"), error.kind, "outcome kind")
            assertEquals(want.jsonObject.strOrNull("reason"), error.reason, "outcome reason")
        }
        // No user-token answer made the device refresh, attest or stop.
        assertTrue(devices.actions.all { it == ReasonAction.NONE }, "device actions ${devices.actions}")
    }

    // ---- me.json ----

    fun me(vector: JsonObject) = runBlocking {
        val input = vector.obj("input")
        val expected = vector.obj("expected")
        val status = input["status"]!!.jsonPrimitive.int
        val body = input.str("body")
        val transport = ScriptedTransport {
            val headers = ArrayList(listOf("Content-Type" to "application/json"))
            if (status != 200) headers.add("Tollgate-Error" to (kotlinx.serialization.json.Json.parseToJsonElement(body).jsonObject.obj("error").str("type")))
            Triple(status, headers, body)
        }
        val client = TollgateClient(BASE, APP_TOKEN, StaticDeviceToken("e30.e30.c2ln"), transport, clock = { 1_764_000_000_000L })
        var result: Me? = null
        var failure: TollgateError? = null
        try {
            result = client.me()
        } catch (error: TollgateError) {
            failure = error
        }
        assertEquals(listOf("$BASE/v1/me"), transport.calls.map { it.url }, "url")
        assertEquals("GET", transport.calls.single().method)
        assertEquals(
            listOf("Tollgate-App-Token", "Tollgate-Device-Token", "Tollgate-Request-Time", "Tollgate-SDK"),
            transport.calls.single().headers.map { it.first }.sorted(),
            "headers",
        )
        if (expected.containsKey("error")) {
            val error = failure ?: fail("expected ${expected.str("error")}, got an answer")
            assertEquals(expected.str("error"), error.kind, "kind")
            if (expected.containsKey("reason")) assertEquals(expected.strOrNull("reason"), error.reason, "reason")
            return@runBlocking
        }
        val me = result ?: fail("failed: ${failure?.message}")
        assertEquals(expected.strOrNull("deviceId"), me.deviceId, "deviceId")
        assertEquals(expected.strOrNull("userId"), me.userId, "userId")
        assertEquals(expected["signedIn"]!!.jsonPrimitive.boolean, me.signedIn, "signedIn")
        val limits = expected["limits"]!!.jsonArray.map { it.jsonObject }
        assertEquals(limits.size, me.limits.size, "limits")
        limits.zip(me.limits).forEach { (want, got) ->
            assertEquals(want.str("name"), got.name, "name")
            assertEquals(want.strOrNull("scope"), got.scope, "scope")
            assertEquals(want.strOrNull("unit"), got.unit, "unit")
            assertEquals(want["limit"]!!.jsonPrimitive.content.toDouble(), got.limit, "limit")
            assertEquals(want["remaining"]!!.jsonPrimitive.content.toDouble(), got.remaining, "remaining")
            assertEquals(want.strOrNull("window"), got.window, "window")
            assertEquals(want.longOrNull("resetsAtMs"), got.resetsAtMs, "resetsAtMs")
        }
    }

    // ---- helpers ----

    private fun JsonObject.obj(name: String): JsonObject = (this[name] ?: fail("missing field \"$name\"")).jsonObject

    private fun JsonObject.str(name: String): String {
        val value = this[name] ?: fail("missing field \"$name\"")
        if (value !is JsonPrimitive || !value.isString) fail("field \"$name\" is not a string")
        return value.content
    }

    /** A string field that may be null or absent. */
    private fun JsonObject.strOrNull(name: String): String? = when (val value: JsonElement? = this[name]) {
        null, is JsonNull -> null
        is JsonPrimitive -> if (value.isString) value.content else fail("field \"$name\" is not a string")
        else -> fail("field \"$name\" is not a string")
    }

    private fun JsonObject.longOrNull(name: String): Long? = when (val value = this[name] ?: fail("missing field \"$name\"")) {
        is JsonNull -> null
        else -> value.jsonPrimitive.long
    }
}
