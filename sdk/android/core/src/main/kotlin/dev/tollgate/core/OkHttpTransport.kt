package dev.tollgate.core

import kotlinx.coroutines.suspendCancellableCoroutine
import okhttp3.Call
import okhttp3.Callback
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import java.io.FilterInputStream
import java.io.IOException
import java.util.concurrent.TimeUnit
import kotlin.coroutines.resumeWithException

/**
 * [HttpTransport] over OkHttp (Android has no `java.net.http`). Redirects are not followed (a 3xx would carry the
 * Tollgate tokens to another address), the body is not buffered, and cancellation is safe both ways: cancelling the
 * calling coroutine cancels the call (the gateway then aborts the upstream request), and a response that arrives just
 * as the coroutine is cancelled is closed, not leaked with its connection.
 */
public class OkHttpTransport internal constructor(private val calls: Call.Factory) : HttpTransport {
    public constructor(client: OkHttpClient = OkHttpClient()) : this(configure(client) as Call.Factory)

    override suspend fun execute(call: HttpCall): HttpResult {
        val request = try {
            Request.Builder().url(call.url).apply {
                for ((name, value) in call.headers) addHeader(name, value)
                // A null media type keeps the Content-Type header the SDK set (RequestBuilder) as it is.
                val body = when {
                    call.body.isNotEmpty() -> call.body.toRequestBody(null)
                    call.method in METHODS_WITH_BODY -> ByteArray(0).toRequestBody(null)
                    else -> null
                }
                method(call.method, body)
            }.build()
        } catch (error: IllegalArgumentException) {
            throw TollgateError.InvalidRequest("The request cannot be sent: ${error.message}")
        }
        val okCall = calls.newCall(request)
        return suspendCancellableCoroutine { continuation ->
            continuation.invokeOnCancellation { okCall.cancel() }
            okCall.enqueue(object : Callback {
                override fun onFailure(call: Call, e: IOException) {
                    continuation.resumeWithException(e)
                }

                override fun onResponse(call: Call, response: Response) {
                    val result = HttpResult(response.code, response.headers.toMultimap(), bodyStream(okCall, response))
                    // Cancelled in the meantime: the result is dropped, so its response is closed here (else its
                    // connection stays checked out until the server gives up).
                    continuation.resume(result) { response.close() }
                }
            })
        }
    }

    private fun bodyStream(okCall: Call, response: Response): java.io.InputStream {
        val body = response.body ?: run {
            response.close()
            return java.io.ByteArrayInputStream(ByteArray(0))
        }
        return object : FilterInputStream(body.byteStream()) {
            override fun close() {
                // Closing before the end cancels the call, so that the connection is not left reading.
                okCall.cancel()
                response.close()
            }
        }
    }

    public companion object {
        /** Methods for which OkHttp requires a body object, even an empty one. */
        private val METHODS_WITH_BODY = setOf("POST", "PUT", "PATCH", "PROPPATCH", "REPORT")

        /** The client as the SDK uses it: no redirects, 120 s between two reads (a model may think before its first token). */
        public fun configure(client: OkHttpClient): OkHttpClient = client.newBuilder()
            .followRedirects(false)
            .followSslRedirects(false)
            .readTimeout(120, TimeUnit.SECONDS)
            .build()
    }
}
