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
) {
    private val builder = RequestBuilder(baseUrl, appToken, sdk)

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
     * Sends [request] and returns the 2xx response head, or throws the mapped error. An attestationFailed is reported to
     * the token source and, when its action says so, the request is sent once more; a rateLimited is retried per [retry].
     */
    private suspend fun open(request: TollgateRequest): HttpResult {
        var attestationRetried = false
        var retries = 0
        var waitedSeconds = 0L
        while (true) {
            val token = deviceTokens.deviceToken()
            val built = builder.build(request, token, clock())
            val headers = built.headers.toMutableList()
            deviceTokens.assertion(Digest.unhex(built.digest))?.let { headers.add("Tollgate-Assertion" to it) }
            val result = try {
                transport.execute(HttpCall(built.method, built.url, headers, built.body))
            } catch (error: TollgateError) {
                throw error
            } catch (error: CancellationException) {
                throw error
            } catch (error: Exception) {
                throw ErrorMapper.noResponse(error)
            }
            if (result.status in 200..299) return result
            val body = result.use {
                try {
                    it.body.readBytes()
                } catch (error: IOException) {
                    throw TollgateError.NetworkError(error)
                }
            }
            val error = ErrorMapper.map(result.status, result.headers, body, clock())
                ?: throw TollgateError.NetworkError(null, "Unexpected HTTP ${result.status}.")
            if (error is TollgateError.AttestationFailed) {
                val action = deviceTokens.report(token, error)
                if (action.retryOnce && !attestationRetried) {
                    attestationRetried = true
                    continue
                }
                throw error
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
