package dev.tollgate.core

import com.sun.net.httpserver.HttpExchange
import com.sun.net.httpserver.HttpServer
import kotlinx.coroutines.flow.catch
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.net.InetAddress
import java.net.InetSocketAddress
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger

/** [TollgateClient] and [AttestationApi] against a fake gateway on loopback. */
class ClientTest {
    private lateinit var server: HttpServer
    private lateinit var baseUrl: String
    private val seen = ConcurrentLinkedQueue<Map<String, String>>()
    private val appToken = "at_0123456789abcdefghijABCDEFGHIJkl"

    @BeforeEach
    fun start() {
        server = HttpServer.create(InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0)
        server.start()
        baseUrl = "http://127.0.0.1:${server.address.port}"
    }

    @AfterEach
    fun stop() = server.stop(0)

    private fun route(path: String, handler: (HttpExchange) -> Unit) {
        server.createContext(path) { exchange ->
            try {
                seen.add(exchange.requestHeaders.entries.associate { it.key.lowercase() to it.value.first() } +
                    mapOf(":path" to exchange.requestURI.rawPath + (exchange.requestURI.rawQuery?.let { "?$it" } ?: ""), ":method" to exchange.requestMethod,
                        ":body" to exchange.requestBody.readBytes().toString(Charsets.UTF_8)))
                handler(exchange)
            } finally {
                exchange.close()
            }
        }
    }

    private fun HttpExchange.reply(status: Int, body: String, vararg headers: Pair<String, String>) {
        headers.forEach { (name, value) -> responseHeaders.add(name, value) }
        val bytes = body.toByteArray()
        sendResponseHeaders(status, if (bytes.isEmpty()) -1 else bytes.size.toLong())
        if (bytes.isNotEmpty()) responseBody.write(bytes)
    }

    private fun client(tokens: DeviceTokenSource = StaticDeviceToken("dev-token"), time: Long = 1_764_000_000_000) =
        TollgateClient(baseUrl, appToken, tokens, clock = { time })

    @Test
    fun `request sends the Tollgate headers and the body, and returns the 2xx body`() = runBlocking {
        route("/v1/proxy/openai/v1/chat/completions") { it.reply(200, """{"id":"c1"}""", "Content-Type" to "application/json") }
        val body = """{"model":"gpt-4o-mini"}"""
        val response = client().request("POST", "openai/v1/chat/completions", RequestBody.Text(body), query = listOf("a" to "b c"))
        assertEquals(200, response.status)
        assertEquals("""{"id":"c1"}""", response.text)
        val request = seen.single()
        assertEquals("POST", request[":method"])
        assertEquals("/v1/proxy/openai/v1/chat/completions?a=b%20c", request[":path"])
        assertEquals(body, request[":body"])
        assertEquals(appToken, request["tollgate-app-token"])
        assertEquals("dev-token", request["tollgate-device-token"])
        assertEquals("1764000000000", request["tollgate-request-time"])
        assertEquals("android/1.2.0", request["tollgate-sdk"])
        assertEquals("application/json", request["content-type"])
    }

    @Test
    fun `a provider error passes through and a gateway error is mapped`() = runBlocking {
        route("/v1/proxy/openai/v1/models") { it.reply(404, """{"error":"no such model"}""") }
        route("/v1/proxy/anthropic/v1/messages") {
            it.reply(429, """{"error":{"type":"rateLimited","message":"Slow down.","requestId":"r1"}}""", "Tollgate-Error" to "rateLimited", "Retry-After" to "9")
        }
        val provider = assertThrows<TollgateError.ProviderError> { runBlocking { client().request("GET", "openai/v1/models") } }
        assertEquals(404, provider.status)
        assertEquals("""{"error":"no such model"}""", provider.body)
        val limited = assertThrows<TollgateError.RateLimited> { runBlocking { client().request("POST", "anthropic/v1/messages", RequestBody.Text("{}")) } }
        assertEquals(9L, limited.retryAfterSeconds)
        assertEquals("r1", limited.requestId)
    }

    @Test
    fun `an unsafe endpoint is refused before anything is sent`() {
        assertThrows<TollgateError.InvalidRequest> { runBlocking { client().request("GET", "openai/v1/../admin") } }
        assertTrue(seen.isEmpty())
    }

    /** Hands out token-1, token-2, …: a new one after each refusal whose action drops the token. */
    private class CountingTokens : DeviceTokenSource {
        var issued = 0
        private var current: String? = null
        val reports = ArrayList<ReasonAction>()

        override suspend fun deviceToken(): String = current ?: "token-${++issued}".also { current = it }

        override suspend fun report(token: String?, error: TollgateError): ReasonAction {
            val action = ReasonAction.of(error)
            reports.add(action)
            if (action == ReasonAction.REFRESH || action == ReasonAction.ATTEST) current = null
            return action
        }
    }

    @Test
    fun `attestationFailed without a reason refreshes the device token and retries once`() = runBlocking {
        route("/v1/proxy/openai/v1/models") { exchange ->
            if (exchange.requestHeaders.getFirst("Tollgate-Device-Token") == "token-1") {
                exchange.reply(403, "{}", "Tollgate-Error" to "attestationFailed")
            } else {
                exchange.reply(200, "ok")
            }
        }
        val tokens = CountingTokens()
        assertEquals("ok", client(tokens).request("GET", "openai/v1/models").text)
        assertEquals(2, tokens.issued)
        assertEquals(listOf("token-1", "token-2"), seen.map { it["tollgate-device-token"] })
    }

    @Test
    fun `a second attestationFailed is reported`() {
        route("/v1/proxy/openai/v1/models") { it.reply(403, "{}", "Tollgate-Error" to "attestationFailed") }
        assertThrows<TollgateError.AttestationFailed> { runBlocking { client(CountingTokens()).request("GET", "openai/v1/models") } }
        assertEquals(2, seen.size)
    }

    @Test
    fun `an attestationFailed with an unknown reason is surfaced without a retry`() {
        route("/v1/proxy/openai/v1/models") {
            it.reply(403, """{"error":{"type":"attestationFailed","reason":"request_time_skew","message":"Clock skew.","requestId":"r1"}}""", "Tollgate-Error" to "attestationFailed")
        }
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { client(CountingTokens()).request("GET", "openai/v1/models") } }
        assertEquals("request_time_skew", error.reason)
        assertEquals(1, seen.size)
    }

    @Test
    fun `rateLimited is not retried by default`() {
        route("/v1/proxy/openai/v1/models") { it.reply(429, "{}", "Tollgate-Error" to "rateLimited", "Retry-After" to "0") }
        val error = assertThrows<TollgateError.RateLimited> { runBlocking { client().request("GET", "openai/v1/models") } }
        assertEquals(0L, error.retryAfterSeconds)
        assertEquals(1, seen.size)
    }

    @Test
    fun `rateLimited is retried per RetryOptions, honouring Retry-After`() = runBlocking {
        val calls = AtomicInteger()
        route("/v1/proxy/openai/v1/models") {
            if (calls.incrementAndGet() < 3) it.reply(429, "{}", "Tollgate-Error" to "rateLimited", "Retry-After" to "0") else it.reply(200, "ok")
        }
        val client = TollgateClient(baseUrl, appToken, StaticDeviceToken("dev-token"), retry = RetryOptions(maxRetries = 3, maxWaitSeconds = 30))
        assertEquals("ok", client.request("GET", "openai/v1/models").text)
        assertEquals(3, seen.size)
    }

    @Test
    fun `a provider 429 is never retried`() {
        route("/v1/proxy/openai/v1/models") { it.reply(429, "slow down", "Retry-After" to "0") }
        val client = TollgateClient(baseUrl, appToken, StaticDeviceToken("dev-token"), retry = RetryOptions())
        assertThrows<TollgateError.ProviderError> { runBlocking { client.request("GET", "openai/v1/models") } }
        assertEquals(1, seen.size)
    }

    @Test
    fun `stream parses SSE written in separate flushes`() = runBlocking {
        route("/v1/proxy/openai/v1/chat/completions") { exchange ->
            exchange.responseHeaders.add("Content-Type", "text/event-stream")
            exchange.sendResponseHeaders(200, 0)
            for (piece in listOf("data: {\"a\"", ":1}\n\nda", "ta: [DONE]\n", "\n")) {
                exchange.responseBody.write(piece.toByteArray())
                exchange.responseBody.flush()
                Thread.sleep(20)
            }
        }
        val events = client().stream(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text("{}")), StreamFormat.SSE).toList()
        assertEquals(listOf(StreamEvent.Sse("message", """{"a":1}"""), StreamEvent.Sse("message", "[DONE]")), events)
    }

    @Test
    fun `stream parses a JSON array and raw bytes`() = runBlocking {
        route("/v1/proxy/gemini/v1beta/models/m:streamGenerateContent") { it.reply(200, "[{\"a\":1}\r\n,\r\n{\"b\":[2]}]") }
        route("/v1/proxy/elevenlabs/v1/text-to-speech/v/stream") { it.reply(200, "\u0001\u0002\u0003") }
        val events = client().stream(TollgateRequest("POST", "gemini/v1beta/models/m:streamGenerateContent", RequestBody.Text("{}")), StreamFormat.JSON_ARRAY).toList()
        assertEquals(
            listOf(StreamEvent.Json(JsonObject(mapOf("a" to JsonPrimitive(1)))), StreamEvent.Json(JsonObject(mapOf("b" to JsonArray(listOf(JsonPrimitive(2))))))),
            events,
        )
        val bytes = client().stream(TollgateRequest("POST", "elevenlabs/v1/text-to-speech/v/stream", RequestBody.Text("{}")), StreamFormat.RAW).toList()
            .fold(ByteArray(0)) { all, event -> all + (event as StreamEvent.Bytes).bytes }
        assertEquals(listOf<Byte>(1, 2, 3), bytes.toList())
    }

    @Test
    fun `a stream cut before its declared end is a networkError after the complete events`() {
        route("/v1/proxy/openai/v1/chat/completions") { exchange ->
            exchange.sendResponseHeaders(200, 1000)
            exchange.responseBody.write("data: one\n\ndata: tw".toByteArray())
            exchange.responseBody.flush()
            // Closing the connection with 981 bytes missing.
            exchange.httpContext.server.stop(0)
        }
        val received = ArrayList<StreamEvent>()
        val error = assertThrows<TollgateError.NetworkError> {
            runBlocking {
                client().stream(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text("{}")), StreamFormat.SSE).collect { received.add(it) }
            }
        }
        assertEquals(listOf(StreamEvent.Sse("message", "one")), received)
        assertTrue(error.cause != null)
    }

    @Test
    fun `a malformed stream is a networkError after the events before it`() = runBlocking {
        route("/v1/proxy/cohere/v1/generate") { it.reply(200, "{\"a\":1}\nnot json\n") }
        val received = ArrayList<StreamEvent>()
        var failure: Throwable? = null
        client().stream(TollgateRequest("POST", "cohere/v1/generate", RequestBody.Text("{}")), StreamFormat.NDJSON)
            .catch { failure = it }
            .collect { received.add(it) }
        assertEquals(1, received.size)
        assertTrue(failure is TollgateError.NetworkError)
    }

    @Test
    fun `a collector that stops early closes the stream`() = runBlocking {
        route("/v1/proxy/openai/v1/chat/completions") { exchange ->
            exchange.sendResponseHeaders(200, 0)
            try {
                repeat(200) {
                    exchange.responseBody.write("data: $it\n\n".toByteArray())
                    exchange.responseBody.flush()
                    Thread.sleep(5)
                }
            } catch (_: java.io.IOException) {
                // The client went away: what the gateway sees as a disconnect.
            }
        }
        val first = client().stream(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text("{}")), StreamFormat.SSE).take(2).toList()
        assertEquals(listOf("0", "1"), first.map { (it as StreamEvent.Sse).data })
    }

    @Test
    fun `no response is a networkError`() {
        stop()
        assertThrows<TollgateError.NetworkError> { runBlocking { client().request("GET", "openai/v1/models") } }
        server = HttpServer.create(InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0)
    }

    @Test
    fun `attestation exchange gets a challenge and trades an artifact for a device token`() = runBlocking {
        route("/v1/attest/challenge") { it.reply(200, """{"challenge":"AAEC","expiresAt":"2025-11-24T16:05:00.000Z"}""") }
        // The loopback server stamps its real Date, from which the client learns the gateway's clock: the device clock is
        // fixed at the real time, so that the answer's expiresAt (gateway clock) and expiresIn agree.
        val now = System.currentTimeMillis()
        route("/v1/attest/android-key-attestation") {
            it.reply(200, """{"deviceToken":"dt","expiresAt":"${java.time.Instant.ofEpochMilli(now + 3_600_000)}","expiresIn":3600,"deviceId":"d","method":"android-key-attestation"}""")
        }
        val api = AttestationApi(baseUrl, appToken, "android/1.2.0", JavaNetHttpTransport(), clock = { now })
        val challenge = api.challenge()
        assertEquals(listOf<Byte>(0, 1, 2), challenge.bytes().toList())
        assertEquals(1_764_000_300_000, challenge.expiresAtMs)
        val token = api.exchange("android-key-attestation", JsonObject(mapOf("challenge" to JsonPrimitive(challenge.value), "chain" to JsonArray(listOf(JsonPrimitive("MIIB"))))))
        assertEquals("dt", token.token)
        assertEquals(now + 3_600_000, token.expiresAtMs)
        val exchange = seen.last()
        assertEquals("""{"challenge":"AAEC","chain":["MIIB"]}""", exchange[":body"])
        assertEquals(appToken, exchange["tollgate-app-token"])
        assertEquals(null, exchange["tollgate-device-token"])
    }
}
