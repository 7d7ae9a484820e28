package dev.tollgate.core

import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import okio.ByteString
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit

/**
 * The client side of realtime sessions against a loopback WebSocket server (OkHttp's MockWebServer) that answers as
 * protocol.md "Realtime sessions" says the gateway does: the upgrade's headers, frames both ways, a refused upgrade as a
 * plain HTTP error, and the gateway's 44xx/45xx closes with the error reason as the close reason.
 */
class RealtimeLoopbackTest {
    private lateinit var server: MockWebServer
    private var attestor = TestSupport.CountingAttestor { token() }
    private var issued = 0

    private fun token() = DeviceToken("device-token-${++issued}", System.currentTimeMillis() + 3_600_000, System.currentTimeMillis())

    @BeforeEach
    fun start() {
        server = MockWebServer()
        server.start()
    }

    @AfterEach
    fun stop() = server.shutdown()

    private fun client(session: DeviceSession = DeviceSession(api(), attestor)): Pair<TollgateClient, DeviceSession> {
        val base = server.url("/").toString().trimEnd('/')
        return TollgateClient(base, TestSupport.APP_TOKEN, session, OkHttpTransport()) to session
    }

    private fun api() = AttestationApi(server.url("/").toString().trimEnd('/'), TestSupport.APP_TOKEN, "android/test", OkHttpTransport())

    /** A server socket that records what it receives and runs [script] once open. */
    private class ServerSide(val script: (WebSocket) -> Unit) : WebSocketListener() {
        val received = LinkedBlockingQueue<Any>()

        override fun onOpen(webSocket: WebSocket, response: Response) = script(webSocket)
        override fun onMessage(webSocket: WebSocket, text: String) {
            received.add(text)
            if (text == "echo") webSocket.send("echo: $text")
        }

        override fun onMessage(webSocket: WebSocket, bytes: ByteString) {
            received.add(bytes.toByteArray())
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            received.add("close $code")
            webSocket.close(code, null)
        }
    }

    @Test
    fun `frames go both ways and the upgrade carries the Tollgate headers`() = runBlocking {
        val side = ServerSide { socket ->
            socket.send("hello")
            socket.send(byteArrayOf(1, 2, 3).let { ByteString.of(*it) })
        }
        server.enqueue(MockResponse().withWebSocketUpgrade(side).addHeader("Sec-WebSocket-Protocol", "realtime"))
        val (client) = client()
        client.setUserTokenProvider { TestSupport.jws("""{"sub":"u1","exp":${System.currentTimeMillis() / 1000 + 3600}}""") }
        val session = client.realtime("openai/v1/realtime?model=gpt-realtime", protocols = listOf("realtime"))
        val upgrade = server.takeRequest(5, TimeUnit.SECONDS)!!
        assertEquals("/v1/proxy/openai/v1/realtime?model=gpt-realtime", upgrade.path)
        assertEquals("GET", upgrade.method)
        assertEquals(TestSupport.APP_TOKEN, upgrade.getHeader("Tollgate-App-Token"))
        assertEquals("device-token-1", upgrade.getHeader("Tollgate-Device-Token"))
        assertTrue(upgrade.getHeader("Tollgate-Request-Time")!!.toLong() > 0)
        assertEquals(TollgateClient.DEFAULT_SDK, upgrade.getHeader("Tollgate-SDK"))
        assertTrue(upgrade.getHeader("Tollgate-User-Token")!!.contains('.'))
        assertEquals("realtime", upgrade.getHeader("Sec-WebSocket-Protocol"))
        assertEquals("realtime", session.protocol)

        val first = withTimeout(5_000) { session.messages.take(2).toList() }
        assertEquals("hello", (first[0] as RealtimeMessage.Text).text)
        assertArrayEquals(byteArrayOf(1, 2, 3), (first[1] as RealtimeMessage.Binary).bytes)

        assertTrue(session.send("from the app"))
        assertTrue(session.send(byteArrayOf(9, 8)))
        assertEquals("from the app", side.received.poll(5, TimeUnit.SECONDS))
        assertArrayEquals(byteArrayOf(9, 8), side.received.poll(5, TimeUnit.SECONDS) as ByteArray)
        session.close()
        assertEquals("close 1000", side.received.poll(5, TimeUnit.SECONDS))
    }

    @Test
    fun `a refused upgrade is the gateway's typed error with its reason, and nothing is opened`() = runBlocking {
        server.enqueue(
            MockResponse().setResponseCode(403).addHeader("Tollgate-Error", "attestationFailed").addHeader("Content-Type", "application/json")
                .setBody("""{"error":{"type":"attestationFailed","reason":"assertion_invalid","message":"The assertion does not verify.","requestId":"req_1"}}"""),
        )
        val (client) = client()
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { client.realtime("openai/v1/realtime") } }
        assertEquals("assertion_invalid", error.reason)
        assertEquals("req_1", error.requestId)
        assertEquals(1, server.requestCount)
    }

    @Test
    fun `a refused upgrade with an expired device token is refreshed with the same key and tried once more`() = runBlocking {
        server.enqueue(
            MockResponse().setResponseCode(403).addHeader("Tollgate-Error", "attestationFailed")
                .setBody("""{"error":{"type":"attestationFailed","reason":"device_token_expired","message":"Expired."}}"""),
        )
        server.enqueue(MockResponse().withWebSocketUpgrade(ServerSide { it.close(1000, "bye") }))
        val (client) = client()
        val session = client.realtime("openai/v1/realtime")
        assertEquals("device-token-1", server.takeRequest().getHeader("Tollgate-Device-Token"))
        assertEquals("device-token-2", server.takeRequest().getHeader("Tollgate-Device-Token"))
        assertEquals(1, attestor.newKeys)
        assertEquals(1, attestor.refreshes)
        assertEquals(emptyList<RealtimeMessage>(), withTimeout(5_000) { session.messages.toList() })
        assertNull(session.closed!!.error())
    }

    @Test
    fun `a 4429 close ends the messages with rateLimited and its reason`() = runBlocking {
        server.enqueue(MockResponse().withWebSocketUpgrade(ServerSide { socket ->
            socket.send("partial")
            socket.close(4429, "token_budget")
        }))
        val (client) = client()
        val session = client.realtime("openai/v1/realtime")
        val seen = ArrayList<RealtimeMessage>()
        val error = assertThrows<TollgateError.RateLimited> { runBlocking { withTimeout(5_000) { session.messages.collect { seen.add(it) } } } }
        assertEquals("token_budget", error.reason)
        assertEquals("rateLimited", error.errorType)
        assertEquals("partial", (seen.single() as RealtimeMessage.Text).text)
        assertEquals(4429, session.closed!!.code)
        assertEquals(RealtimeAction.NONE, session.closed!!.action)
    }

    @Test
    fun `a 4503 draining close says the app may reconnect`() = runBlocking {
        server.enqueue(MockResponse().withWebSocketUpgrade(ServerSide { it.close(4503, "draining") }))
        val (client) = client()
        val session = client.realtime("openai/v1/realtime")
        val error = assertThrows<TollgateError.NetworkError> { runBlocking { withTimeout(5_000) { session.messages.toList() } } }
        assertEquals("draining", error.reason)
        assertEquals("serviceUnavailable", error.errorType)
        assertTrue(session.closed!!.mayReconnect)
        assertEquals(RealtimeAction.RECONNECT, session.closed!!.action)
    }

    @Test
    fun `a 4403 device_revoked close stops the device session without attesting a new key`() = runBlocking {
        server.enqueue(MockResponse().withWebSocketUpgrade(ServerSide { it.close(4403, "device_revoked") }))
        val (client, session) = client()
        val realtime = client.realtime("openai/v1/realtime")
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { withTimeout(5_000) { realtime.messages.toList() } } }
        assertEquals("device_revoked", error.reason)
        assertEquals(RealtimeAction.STOP, realtime.closed!!.action)
        assertEquals(1, attestor.newKeys)
        assertTrue(session.isRevoked)
        // The next session is refused on the device, without a new key and without reaching the gateway.
        val next = assertThrows<TollgateError.AttestationFailed> { runBlocking { client.realtime("openai/v1/realtime") } }
        assertEquals("device_revoked", next.reason)
        assertEquals(1, attestor.newKeys)
        assertEquals(0, attestor.refreshes)
        assertEquals(1, server.requestCount)
    }

    @Test
    fun `a 4403 user_blocked close changes nothing on the device`() = runBlocking {
        server.enqueue(MockResponse().withWebSocketUpgrade(ServerSide { it.close(4403, "user_blocked") }))
        val (client, session) = client()
        val realtime = client.realtime("openai/v1/realtime")
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { withTimeout(5_000) { realtime.messages.toList() } } }
        assertEquals("user_blocked", error.reason)
        assertTrue(!session.isRevoked)
        assertEquals(1, attestor.newKeys)
        assertEquals(0, attestor.refreshes)
    }

    @Test
    fun `every gateway close code maps to its typed error`() {
        val expected = mapOf(
            4400 to "invalidRequest", 4401 to "unauthorized", 4403 to "attestationFailed", 4429 to "rateLimited",
            4502 to "networkError", 4503 to "networkError", 4504 to "networkError", 4499 to "invalidRequest", 4599 to "networkError",
        )
        for ((code, kind) in expected) assertEquals(kind, RealtimeClose(code, "some_reason").error()!!.kind, "$code")
        assertEquals("some_reason", RealtimeClose(4504, "some_reason").error()!!.reason)
        assertNull(RealtimeClose(1000, "").error())
        assertEquals("networkError", RealtimeClose(1011, "server error").error()!!.kind)
        assertEquals("providerError", RealtimeClose(1008, "invalid_api_key").error()!!.kind)
        assertEquals(4429, RealtimeClose(4429, "token_budget").error()!!.closeCode)
    }

    @Test
    fun `the provider's frames are delivered in order, all of them, through the bounded buffer`() = runBlocking {
        server.enqueue(MockResponse().withWebSocketUpgrade(ServerSide { socket ->
            for (index in 0 until 500) socket.send("frame $index")
            socket.close(1000, null)
        }))
        val (client) = client()
        val session = client.realtime("openai/v1/realtime")
        val frames = withTimeout(10_000) { session.messages.toList() }
        assertEquals((0 until 500).map { "frame $it" }, frames.map { (it as RealtimeMessage.Text).text })
        assertEquals(1000, session.closed!!.code)
    }
}
