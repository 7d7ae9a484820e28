package dev.tollgate

import dev.tollgate.core.HttpCall
import dev.tollgate.core.HttpResult
import dev.tollgate.core.HttpTransport
import dev.tollgate.core.TollgateError
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
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

/**
 * [HttpTransport] over OkHttp (Android has no `java.net.http`). Redirects are not followed, the body is not buffered,
 * and cancelling the calling coroutine cancels the call (the gateway then aborts the upstream request).
 */
public class OkHttpTransport(client: OkHttpClient = OkHttpClient()) : HttpTransport {
    private val client: OkHttpClient = client.newBuilder()
        .followRedirects(false)
        .followSslRedirects(false)
        // Time between two reads: a model may think for a while before its first token.
        .readTimeout(120, TimeUnit.SECONDS)
        .build()

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
        val okCall = client.newCall(request)
        return suspendCancellableCoroutine { continuation ->
            continuation.invokeOnCancellation { okCall.cancel() }
            okCall.enqueue(object : Callback {
                override fun onFailure(call: Call, e: IOException) {
                    continuation.resumeWithException(e)
                }

                override fun onResponse(call: Call, response: Response) {
                    val body = response.body
                    val stream = if (body == null) java.io.ByteArrayInputStream(ByteArray(0)) else object : FilterInputStream(body.byteStream()) {
                        override fun close() {
                            // Closing before the end cancels the call, so that the connection is not left reading.
                            okCall.cancel()
                            response.close()
                        }
                    }
                    continuation.resume(HttpResult(response.code, response.headers.toMultimap(), stream))
                }
            })
        }
    }

    private companion object {
        /** Methods for which OkHttp requires a body object, even an empty one. */
        val METHODS_WITH_BODY = setOf("POST", "PUT", "PATCH", "PROPPATCH", "REPORT")
    }
}
