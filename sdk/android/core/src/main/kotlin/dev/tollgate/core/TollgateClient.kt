package dev.tollgate.core

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
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
 * Every failure is a [TollgateError]. When the gateway refuses the device token (attestationFailed), the token is
 * invalidated and the request is sent once more with a fresh one.
 *
 * ```
 * val client = TollgateClient("https://gateway.example.com", "at_…", deviceTokens)
 * val reply = client.request(TollgateRequest("POST", "openai/v1/chat/completions", RequestBody.Text(json)))
 * client.stream(TollgateRequest("POST", "anthropic/v1/messages", RequestBody.Text(json), headers = mapOf("anthropic-version" to "2023-06-01")), StreamFormat.SSE)
 *     .collect { event -> … }
 * ```
 *
 * @param sdk the `Tollgate-SDK` value.
 * @param assertion optional signer of the request digest, sent as `Tollgate-Assertion` when it returns a value.
 */
public class TollgateClient(
    baseUrl: String,
    appToken: String,
    private val deviceTokens: DeviceTokenSource,
    private val transport: HttpTransport = JavaNetHttpTransport(),
    sdk: String = DEFAULT_SDK,
    private val clock: () -> Long = System::currentTimeMillis,
    private val assertion: (suspend (BuiltRequest) -> String?)? = null,
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
     * A cut or malformed stream ends the flow with [TollgateError.NetworkError] after the events already complete.
     * Cancelling the collector closes the connection, which makes the gateway abort the upstream request.
     */
    public fun stream(request: TollgateRequest, format: StreamFormat): Flow<StreamEvent> = flow {
        // Reads run on the IO dispatcher, interruptibly, one at a time; events are emitted in the collector's context.
        // (Not `flowOn`: a failing producer there cancels the collector before it receives the events already parsed.)
        val result = withContext(Dispatchers.IO) { open(request) }
        result.use {
            val parser = format.newParser()
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

    /** Sends [request] and returns the 2xx response head, or throws the mapped error. Retries once on attestationFailed. */
    private suspend fun open(request: TollgateRequest): HttpResult {
        var attempt = 0
        while (true) {
            attempt += 1
            val token = deviceTokens.deviceToken()
            val built = builder.build(request, token, clock())
            val headers = built.headers.toMutableList()
            assertion?.invoke(built)?.let { headers.add("Tollgate-Assertion" to it) }
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
            if (error is TollgateError.AttestationFailed && attempt == 1) {
                deviceTokens.invalidate(token)
                continue
            }
            throw error
        }
    }

    public companion object {
        /** The SDK version of this build. */
        public const val VERSION: String = "1.2.0"

        /** `Tollgate-SDK` sent by default. */
        public const val DEFAULT_SDK: String = "android/$VERSION"
    }
}
