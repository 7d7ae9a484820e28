package dev.tollgate.core

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import okhttp3.Call
import okhttp3.Callback
import okhttp3.Protocol
import okhttp3.Request
import okhttp3.Response
import okhttp3.ResponseBody
import okhttp3.ResponseBody.Companion.toResponseBody
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import okhttp3.mockwebserver.RecordedRequest
import okio.Buffer
import okio.BufferedSource
import okio.Timeout
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.time.Instant
import java.time.ZoneOffset
import java.time.format.DateTimeFormatter
import java.util.Base64
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger

/**
 * The SDK additions against a loopback gateway (MockWebServer): the server clock (expiry from `expiresIn`, offset from
 * `Date`), the user-token callback, `GET /v1/me`, the Play Integrity every-request assertion, the warm-up, and the
 * cancellation safety of the OkHttp transport.
 */
class ProtocolAdditionsTest {
    private lateinit var server: MockWebServer
    private val requests = ConcurrentLinkedQueue<RecordedRequest>()
    private var route: (RecordedRequest) -> MockResponse = { MockResponse().setResponseCode(404) }

    @BeforeEach
    fun start() {
        server = MockWebServer()
        server.dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest): MockResponse {
                requests.add(request)
                return route(request)
            }
        }
        server.start()
    }

    @AfterEach
    fun stop() = server.shutdown()

    private val base get() = server.url("/").toString().trimEnd('/')

    private fun httpDate(ms: Long) = DateTimeFormatter.RFC_1123_DATE_TIME.format(Instant.ofEpochMilli(ms).atZone(ZoneOffset.UTC))

    private fun attestAnswer(serverNow: Long, lifetimeSeconds: Long, id: Int) = MockResponse()
        .addHeader("Content-Type", "application/json")
        .addHeader("Date", httpDate(serverNow))
        .setBody(
            """{"deviceToken":"${TestSupport.jws("""{"exp":${serverNow / 1000 + lifetimeSeconds},"n":$id}""")}","expiresAt":"${Instant.ofEpochMilli(serverNow + lifetimeSeconds * 1000)}",""" +
                """"expiresIn":$lifetimeSeconds,"deviceId":"dev-1","method":"development"}""",
        )

    @Test
    fun `a device clock an hour ahead neither re-attests on every call nor stamps its own time`() = runBlocking {
        val skew = 3_600_000L
        val deviceClock = { System.currentTimeMillis() + skew }
        val attestations = AtomicInteger()
        route = { request ->
            when (request.path) {
                "/v1/attest/development" -> attestAnswer(System.currentTimeMillis(), 3600, attestations.incrementAndGet())
                else -> MockResponse().addHeader("Date", httpDate(System.currentTimeMillis())).setBody("{}")
            }
        }
        val serverClock = ServerClock(deviceClock)
        val api = AttestationApi(base, TestSupport.APP_TOKEN, "android/test", OkHttpTransport(), deviceClock, serverClock)
        val attestor = object : Attestor {
            override suspend fun refresh(api: AttestationApi): DeviceToken? = null
            override suspend fun attestNewKey(api: AttestationApi): DeviceToken =
                api.exchange("development", AttestationBodies.development("dt_x", "sim-1"))
            override suspend fun sign(digest: ByteArray): ByteArray? = null
        }
        val session = DeviceSession(api, attestor, clock = deviceClock)
        val client = TollgateClient(base, TestSupport.APP_TOKEN, session, OkHttpTransport(), clock = deviceClock, serverClock = serverClock)
        repeat(3) { client.request("POST", "openai/v1/chat/completions", RequestBody.Text("{}")) }
        assertEquals(1, attestations.get(), "one attestation for three calls")
        val token = session.current()
        assertEquals(3_600_000.0, (token.expiresAtMs - token.receivedAtMs).toDouble(), 5_000.0)
        val stamped = requests.filter { it.path!!.startsWith("/v1/proxy/") }.map { it.getHeader("Tollgate-Request-Time")!!.toLong() }
        for (time in stamped) assertEquals(System.currentTimeMillis().toDouble(), time.toDouble(), 5_000.0, "Tollgate-Request-Time on the gateway's clock")
    }

    @Test
    fun `expiry comes from expiresIn, and absolute times only through a known offset`() {
        val clock = ServerClock { 10_000_000L }
        val token = TestSupport.jws("""{"exp":${(10_000_000L - 3_600_000L) / 1000 + 3600}}""")
        // No Date seen: expiresIn alone (the absolute exp, an hour behind the device clock, is not trusted).
        assertEquals(10_000_000L + 3_600_000L, TokenExpiry.expiresAtDeviceMs(token, null, 3600, 10_000_000L, clock))
        clock.observe(mapOf("Date" to listOf(httpDate(10_000_000L - 3_600_000L))))
        assertEquals(-3_600_000.0, clock.offsetMs.toDouble(), 1_000.0)
        assertEquals((10_000_000L + 3_600_000L).toDouble(), TokenExpiry.expiresAtDeviceMs(token, null, null, 10_000_000L, clock).toDouble(), 1_000.0)
    }

    @Test
    fun `the user-token callback runs when nothing fresh is cached, and exactly once more on user_token_expired`() = runBlocking {
        val calls = ConcurrentLinkedQueue<Boolean>()
        var expiredAnswers = 1
        route = { request ->
            val user = request.getHeader("Tollgate-User-Token")
            if (user != null && user.endsWith("first") && expiredAnswers-- > 0) {
                MockResponse().setResponseCode(401).addHeader("Tollgate-Error", "unauthorized")
                    .setBody("""{"error":{"type":"unauthorized","reason":"user_token_expired","message":"Expired."}}""")
            } else {
                MockResponse().setBody("ok")
            }
        }
        val client = TollgateClient(base, TestSupport.APP_TOKEN, StaticDeviceToken("dt"), OkHttpTransport())
        val exp = System.currentTimeMillis() / 1000 + 3600
        client.setUserTokenProvider { force ->
            calls.add(force)
            TestSupport.jws("""{"sub":"u","exp":$exp}""") + if (force) "second" else "first"
        }
        assertEquals("ok", client.request("GET", "openai/v1/models").text)
        assertEquals(listOf(false, true), calls.toList())
        val sent = requests.map { it.getHeader("Tollgate-User-Token")!! }
        assertTrue(sent[0].endsWith("first") && sent[1].endsWith("second"))
        // Cached while fresh: no call for the next request.
        client.request("GET", "openai/v1/models")
        assertEquals(2, calls.size)
        assertTrue(requests.last().getHeader("Tollgate-User-Token")!!.endsWith("second"))

        // Expired again after the refresh: surfaced as unauthorized after exactly one more call.
        route = {
            MockResponse().setResponseCode(401).addHeader("Tollgate-Error", "unauthorized")
                .setBody("""{"error":{"type":"unauthorized","reason":"user_token_expired","message":"Expired."}}""")
        }
        val before = calls.size
        val error = assertThrows<TollgateError.Unauthorized> { runBlocking { client.request("GET", "openai/v1/models") } }
        assertEquals("user_token_expired", error.reason)
        assertEquals(before + 1, calls.size)

        // Sign-out: no user token any more, no call.
        route = { MockResponse().setBody("ok") }
        client.setUserTokenProvider(null)
        client.request("GET", "openai/v1/models")
        assertNull(requests.last().getHeader("Tollgate-User-Token"))
        assertEquals(before + 1, calls.size)
    }

    @Test
    fun `me() reads the gateway's figures with the request's headers`() = runBlocking {
        route = {
            MockResponse().addHeader("Content-Type", "application/json").setBody(
                """{"device":{"id":"dev-1"},"user":{"id":"firebase:u1"},"limits":[""" +
                    """{"name":"requests","scope":"device","unit":"requests","limit":100,"remaining":12,"window":"day","resetsAt":"2026-11-29T00:00:00.000Z"},""" +
                    """{"name":"tokens","scope":"user","unit":"tokens","limit":50000,"remaining":49000.5,"window":"minute","resetsAt":null}]}""",
            )
        }
        val client = TollgateClient(base, TestSupport.APP_TOKEN, StaticDeviceToken("dt"), OkHttpTransport())
        val me = client.me()
        assertEquals("dev-1", me.deviceId)
        assertEquals("firebase:u1", me.userId)
        assertEquals(12.0, me.limit("requests")!!.remaining)
        assertEquals(Instant.parse("2026-11-29T00:00:00Z").toEpochMilli(), me.limit("requests")!!.resetsAtMs)
        assertEquals(49000.5, me.limit("tokens", "user")!!.remaining)
        assertNull(me.limit("tokens")!!.resetsAtMs)
        val sent = requests.single()
        assertEquals("GET", sent.method)
        assertEquals("/v1/me", sent.path)
        assertEquals("dt", sent.getHeader("Tollgate-Device-Token"))
        assertEquals(TestSupport.APP_TOKEN, sent.getHeader("Tollgate-App-Token"))
        assertTrue(sent.getHeader("Tollgate-Request-Time") != null)
    }

    @Test
    fun `every-request mode sends the attestor's proof, a Play Integrity token whose requestHash is the request digest`() = runBlocking {
        route = { MockResponse().setBody("ok") }
        val hashes = ArrayList<String>()
        val attestor = object : Attestor {
            override suspend fun refresh(api: AttestationApi): DeviceToken? = null
            override suspend fun attestNewKey(api: AttestationApi) = DeviceToken("dt", System.currentTimeMillis() + 3_600_000, System.currentTimeMillis())
            override suspend fun sign(digest: ByteArray): ByteArray? = null // no Keystore key: a Play Integrity device
            override suspend fun assertion(digest: ByteArray): String {
                val hash = Proofs.playIntegrityAssertionHash(digest)
                hashes.add(hash)
                return "standard-token-for-$hash"
            }
        }
        val session = DeviceSession(AttestationApi(base, TestSupport.APP_TOKEN, "t", OkHttpTransport()), attestor, sendAssertions = true)
        val client = TollgateClient(base, TestSupport.APP_TOKEN, session, OkHttpTransport())
        client.request("POST", "openai/v1/chat/completions", RequestBody.Text("""{"a":1}"""))
        val sent = requests.single()
        val time = sent.getHeader("Tollgate-Request-Time")!!
        val canonical = "POST\n/v1/proxy/openai/v1/chat/completions\n$time\n${Digest.sha256Hex("""{"a":1}""".toByteArray())}"
        val digest = Digest.sha256(canonical.toByteArray())
        assertEquals(Base64.getUrlEncoder().withoutPadding().encodeToString(digest), hashes.single())
        assertEquals("standard-token-for-${hashes.single()}", sent.getHeader("Tollgate-Assertion"))
    }

    @Test
    fun `the warm-up runs when started, before any request`() = runBlocking {
        val attestor = TestSupport.CountingAttestor { DeviceToken("dt", 0, 0) }
        val session = DeviceSession(AttestationApi(base, TestSupport.APP_TOKEN, "t", OkHttpTransport()), attestor)
        session.warmUpIn(this).join()
        assertEquals(1, attestor.warmUps)
        assertEquals(0, attestor.newKeys + attestor.refreshes)
        assertEquals(0, server.requestCount)
    }

    /** A call whose answer the test delivers by hand, after the coroutine was cancelled. */
    private class HeldCall(private val request: Request) : Call {
        var callback: Callback? = null
        var cancelled = false
        override fun request() = request
        override fun execute(): Response = throw UnsupportedOperationException()
        override fun enqueue(responseCallback: Callback) {
            callback = responseCallback
        }
        override fun cancel() {
            cancelled = true
        }
        override fun isExecuted() = callback != null
        override fun isCanceled() = cancelled
        override fun timeout() = Timeout.NONE
        override fun clone(): Call = HeldCall(request)
    }

    @Test
    fun `a response that arrives as the coroutine is cancelled is closed, not leaked`() = runBlocking {
        var held: HeldCall? = null
        val transport = OkHttpTransport(Call.Factory { request -> HeldCall(request).also { held = it } })
        val job = async(Dispatchers.Default) { transport.execute(HttpCall("GET", "http://127.0.0.1:1/x", emptyList(), ByteArray(0))) }
        withTimeout(5_000) { while (held?.callback == null) delay(5) }
        job.cancel()
        withTimeout(5_000) { while (!held!!.cancelled) delay(5) }
        // OkHttp had the response already (a cancel after the head arrived does not stop onResponse).
        val closed = CompletableDeferred<Unit>()
        val body = object : ResponseBody() {
            override fun contentType() = null
            override fun contentLength() = 2L
            override fun source(): BufferedSource = Buffer().writeUtf8("ok")
            override fun close() {
                closed.complete(Unit)
            }
        }
        val response = Response.Builder().request(held!!.request()).protocol(Protocol.HTTP_1_1).code(200).message("OK").body(body).build()
        held!!.callback!!.onResponse(held!!, response)
        assertTrue(job.isCancelled)
        assertTrue(closed.isCompleted, "the dropped response was closed")
        assertFalse("ok".toResponseBody().contentLength() < 0)
    }
}
