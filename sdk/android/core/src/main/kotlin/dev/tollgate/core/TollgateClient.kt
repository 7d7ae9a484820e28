package dev.tollgate.core

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.runInterruptible
import kotlinx.coroutines.withContext
import java.io.IOException

/** A complete (non-streamed) 2xx response. */
public class TollgateResponse(
    public val status: Int,
    public val headers: Map<String, List<String>>,
    public val body: ByteArray,
) {
    /** The body as UTF-8 text. */
    public val text: String get() = body.toString(Charsets.UTF_8)

    /** First value of a header (case-insensitive). */
    public fun header(name: String): String? = Headers.first(headers, name)
}

/**
 * Calls providers through the gateway: `{baseUrl}/v1/proxy/{endpoint}` with the Tollgate headers (protocol.md).
 * Every failure is a [TollgateError]. When the gateway refuses the device token (attestationFailed), the refusal's
 * `reason` decides ([ReasonAction], via [DeviceTokenSource.report]): refresh, new key or assertions, then the request is
 * sent once more; `device_revoked` is surfaced and stops the device session. The gateway's `rateLimited` is retried
 * only when [retry] is set (off by default).
 *
 * ```
 * val client = TollgateClient("https://gateway.example.com", "at_…", deviceTokens)
 * val reply = client.request(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text(json)))
 * client.stream(TollgateRequest("POST", "anthropic/v1/messages", RequestBody.Text(json), headers = mapOf("anthropic-version" to "2023-06-01")))
 *     .collect { event -> … }   // format from the response's Content-Type
 * ```
 *
 * @param sdk the `Tollgate-SDK` value.
 * @param retry retries of the gateway's `rateLimited` ([RetryOptions]); null (the default) retries nothing.
 */
public class TollgateClient(
    baseUrl: String,
    appToken: String,
    private val deviceTokens: DeviceTokenSource,
    private val transport: HttpTransport = JavaNetHttpTransport(),
    sdk: String = DEFAULT_SDK,
    private val clock: () -> Long = System::currentTimeMillis,
    private val retry: RetryOptions? = null,
    /** The gateway's clock (offset from `Date`), shared with [AttestationApi]: `Tollgate-Request-Time` is stamped with it. */
    public val serverClock: ServerClock = ServerClock(clock),
    /** The signed-in user's token ([setUserTokenProvider]). */
    public val userTokens: UserTokens = UserTokens(serverClock),
    /** The OkHttp client realtime sessions open their WebSocket with. */
    private val webSockets: okhttp3.OkHttpClient? = null,
) {
    private val builder = RequestBuilder(baseUrl, appToken, sdk)

    /** The gateway's base URL. */
    public val baseUrl: String get() = builder.baseUrl

    /**
     * The signed-in user's ID token callback ([UserTokens]): called when no fresh token is cached and once more with
     * `forceRefresh = true` after the gateway's `user_token_expired`. Null signs out (nothing is sent any more).
     */
    public fun setUserTokenProvider(provider: (suspend (forceRefresh: Boolean) -> String?)?) {
        userTokens.setProvider(provider)
    }

    /** `GET /v1/me`: every limit and budget of this device (and user), with what remains. Counts against nothing. */
    public suspend fun me(): Me = withContext(Dispatchers.IO) {
        open({ token, time -> builder.buildRoute("GET", "/v1/me", token, time) }).use { result ->
            val body = try {
                result.body.readBytes()
            } catch (error: IOException) {
                throw TollgateError.NetworkError(error)
            }
            Me.parse(body.toString(Charsets.UTF_8))
        }
    }

    /**
     * Opens a realtime session (protocol.md, "Realtime sessions") at [endpoint] (`{provider}/{version}/{path}`, e.g.
     * `openai/v1/realtime?model=gpt-realtime`): the device token is refreshed when due before the upgrade, and the
     * Tollgate headers (user token and assertion included) go on the upgrade request. Returns once the gateway accepted
     * the upgrade. A refused upgrade throws its typed error (as for any request: an `attestationFailed` whose reason asks
     * for a refresh is retried once, as is `user_token_expired`).
     *
     * @param protocols the provider's own subprotocols, sent as `Sec-WebSocket-Protocol`; each must be an RFC 9110 token
     *   not starting with `tollgate` ([RealtimeUpgrade.checkProtocols]), else [TollgateError.InvalidRequest] before anything is sent.
     */
    public suspend fun realtime(endpoint: String, protocols: List<String> = emptyList(), headers: Map<String, String> = emptyMap()): RealtimeSession {
        RealtimeUpgrade.checkProtocols(protocols)
        val client = webSockets ?: okhttp3.OkHttpClient()
        val request = TollgateRequest("GET", endpoint, null, emptyList(), headers)
        return exchange(
            build = { token, time -> builder.build(request, token, time) },
            send = { built, token -> openSocket(client, built, protocols, token) },
        )
    }

    private suspend fun openSocket(client: okhttp3.OkHttpClient, built: HttpCall, protocols: List<String>, token: String): Attempt<RealtimeSession> {
        val requestBuilder = okhttp3.Request.Builder().url(built.url)
        for ((name, value) in built.headers) requestBuilder.addHeader(name, value)
        if (protocols.isNotEmpty()) requestBuilder.header("Sec-WebSocket-Protocol", protocols.joinToString(", "))
        val session = RealtimeSession { close ->
            // Only 4403 device_revoked changes the device session (it stops); a realtime close never attests a new key.
            if (close.action == RealtimeAction.STOP) {
                kotlinx.coroutines.runBlocking { deviceTokens.report(token, close.error()!!) }
            }
        }
        return kotlinx.coroutines.suspendCancellableCoroutine { continuation ->
            session.opened = { _ ->
                session.refused = null
                continuation.resume(Attempt.Done(session)) { session.cancel() }
            }
            session.refused = { error, response ->
                session.refused = null
                val attempt: Attempt<RealtimeSession> = if (response != null && response.code != 101) {
                    val body = try {
                        response.peekBody(64 * 1024).bytes()
                    } catch (_: IOException) {
                        ByteArray(0)
                    }
                    serverClock.observe(response.headers.toMultimap())
                    Attempt.Refused(
                        ErrorMapper.map(response.code, response.headers.toMultimap(), body, clock())
                            ?: TollgateError.NetworkError(error, "The gateway did not upgrade the connection (HTTP ${response.code})."),
                    )
                } else {
                    Attempt.Refused(ErrorMapper.noResponse(error))
                }
                continuation.resume(attempt) { }
            }
            session.socket = client.newWebSocket(requestBuilder.build(), session.listener)
            continuation.invokeOnCancellation { session.cancel() }
        }
    }

    /** Sends [request] and reads the whole body. */
    public suspend fun request(request: TollgateRequest): TollgateResponse = withContext(Dispatchers.IO) {
        open(request).use { result ->
            val body = try {
                result.body.readBytes()
            } catch (error: IOException) {
                throw TollgateError.NetworkError(error)
            }
            TollgateResponse(result.status, result.headers, body)
        }
    }

    /** Shorthand for [request]. */
    public suspend fun request(
        method: String,
        endpoint: String,
        body: RequestBody? = null,
        query: List<Pair<String, String>> = emptyList(),
        headers: Map<String, String> = emptyMap(),
    ): TollgateResponse = request(TollgateRequest(method, endpoint, body, query, headers))

    /**
     * Sends [request] and emits events parsed per [format] as bytes arrive ([StreamFormat.RAW] emits the byte chunks).
     * Without a [format], the response's `Content-Type` decides ([StreamFormat.fromContentType]: `text/event-stream` is
     * SSE, `application/x-ndjson` NDJSON, `application/json` a JSON array, anything else raw bytes).
     * A cut or malformed stream ends the flow with [TollgateError.NetworkError] after the events already complete.
     * Cancelling the collector closes the connection, which makes the gateway abort the upstream request.
     */
    public fun stream(request: TollgateRequest, format: StreamFormat? = null): Flow<StreamEvent> = flow {
        // Reads run on the IO dispatcher, interruptibly, one at a time; events are emitted in the collector's context.
        // (Not `flowOn`: a failing producer there cancels the collector before it receives the events already parsed.)
        val result = withContext(Dispatchers.IO) { open(request) }
        result.use {
            val parser = (format ?: StreamFormat.fromContentType(Headers.first(result.headers, "Content-Type"))).newParser()
            val buffer = ByteArray(16 * 1024)
            val events = ArrayList<StreamEvent>()
            while (true) {
                val count = try {
                    runInterruptible(Dispatchers.IO) { result.body.read(buffer) }
                } catch (error: IOException) {
                    throw TollgateError.NetworkError(error, "The stream was cut: ${error.message}")
                }
                if (count < 0) break
                if (count == 0) continue
                val failure = runParser { parser.feed(buffer.copyOf(count), events) }
                for (event in events) emit(event)
                events.clear()
                failure?.let { throw it }
            }
            val failure = runParser { parser.finish(events) }
            for (event in events) emit(event)
            failure?.let { throw it }
        }
    }

    /** Runs the parser; a format error is returned (not thrown) so that the events found before it are emitted first. */
    private inline fun runParser(block: () -> Unit): TollgateError? = try {
        block()
        null
    } catch (error: MalformedStreamException) {
        TollgateError.NetworkError(error, "The stream is malformed: ${error.message}")
    }

    /**
     * Sends [request] through [send] (an OkHttp chain, for [TollgateInterceptor]) with the same headers, retries and
     * error mapping as [request]: a 2xx or a provider's own answer (no `Tollgate-Error`) is returned as it is, for the
     * provider SDK to read; a gateway refusal is thrown as its [TollgateError].
     */
    internal suspend fun intercept(request: TollgateRequest, send: (HttpCall) -> okhttp3.Response): okhttp3.Response =
        exchange({ token, time -> builder.build(request, token, time) }) { call, _ ->
            val response = try {
                send(call)
            } catch (error: IOException) {
                throw ErrorMapper.noResponse(error)
            }
            val headers = response.headers.toMultimap()
            serverClock.observe(headers)
            if (response.isSuccessful || response.header("Tollgate-Error") == null) return@exchange Attempt.Done(response)
            val body = response.use {
                try {
                    it.body?.bytes() ?: ByteArray(0)
                } catch (error: IOException) {
                    throw TollgateError.NetworkError(error)
                }
            }
            Attempt.Refused(ErrorMapper.map(response.code, headers, body, clock()) ?: TollgateError.NetworkError(null, "Unexpected HTTP ${response.code}."))
        }

    /** The outcome of one try: a result, or the gateway's refusal (mapped), which [exchange] may act on and retry. */
    private sealed class Attempt<out T> {
        class Done<T>(val value: T) : Attempt<T>()
        class Refused(val error: TollgateError) : Attempt<Nothing>()
    }

    /** Sends [request] and returns the 2xx response head, or throws the mapped error. */
    private suspend fun open(request: TollgateRequest): HttpResult = open { token, time -> builder.build(request, token, time) }

    private suspend fun open(build: (token: String, time: Long) -> BuiltRequest): HttpResult = exchange(build) { call, _ ->
        val result = try {
            transport.execute(call)
        } catch (error: TollgateError) {
            throw error
        } catch (error: CancellationException) {
            throw error
        } catch (error: Exception) {
            throw ErrorMapper.noResponse(error)
        }
        serverClock.observe(result.headers)
        if (result.status in 200..299) return@exchange Attempt.Done(result)
        val body = result.use {
            try {
                it.body.readBytes()
            } catch (error: IOException) {
                throw TollgateError.NetworkError(error)
            }
        }
        Attempt.Refused(
            ErrorMapper.map(result.status, result.headers, body, clock()) ?: TollgateError.NetworkError(null, "Unexpected HTTP ${result.status}."),
        )
    }

    /**
     * One exchange with the gateway's retry rules: an attestationFailed is reported to the token source and, when its
     * action says so, sent once more; `user_token_expired` asks the user-token callback once more and sends once more;
     * a rateLimited is retried per [retry].
     */
    private suspend fun <T> exchange(
        build: (token: String, time: Long) -> BuiltRequest,
        send: suspend (call: HttpCall, deviceToken: String) -> Attempt<T>,
    ): T {
        var attestationRetried = false
        var userTokenRetried = false
        var retries = 0
        var waitedSeconds = 0L
        // Asked once per exchange (the callback runs only when nothing fresh is cached), and once more on expiry.
        var userToken = userTokens.current()
        while (true) {
            val token = deviceTokens.deviceToken()
            val built = build(token, serverClock.now())
            val headers = built.headers.toMutableList()
            userToken?.let { headers.add("Tollgate-User-Token" to it) }
            deviceTokens.assertion(Digest.unhex(built.digest))?.let { headers.add("Tollgate-Assertion" to it) }
            val error = when (val attempt = send(HttpCall(built.method, built.url, headers, built.body), token)) {
                is Attempt.Done -> return attempt.value
                is Attempt.Refused -> attempt.error
            }
            if (error is TollgateError.AttestationFailed) {
                val action = deviceTokens.report(token, error)
                if (action.retryOnce && !attestationRetried) {
                    attestationRetried = true
                    continue
                }
                throw error
            }
            if (error is TollgateError.Unauthorized && error.reason == UserTokens.EXPIRED && userTokens.isSet && !userTokenRetried) {
                userTokenRetried = true
                userToken = userTokens.refreshed()
                continue
            }
            val wait = RetryOptions.delaySeconds(retry, error.kind, (error as? TollgateError.RateLimited)?.retryAfterSeconds, retries, waitedSeconds)
                ?: throw error
            retries += 1
            waitedSeconds += wait
            delay(wait * 1000)
        }
    }

    public companion object {
        /** The SDK version of this build. */
        public const val VERSION: String = "1.2.0"

        /** `Tollgate-SDK` sent by default. */
        public const val DEFAULT_SDK: String = "android/$VERSION"
    }
}
