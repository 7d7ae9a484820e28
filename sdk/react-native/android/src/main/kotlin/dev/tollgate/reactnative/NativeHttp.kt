package dev.tollgate.reactnative

import okhttp3.MediaType.Companion.toMediaTypeOrNull
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.TimeUnit

/**
 * HTTP for the TypeScript core over OkHttp (the Android SDK's HTTP stack), instead of React Native's fetch, which
 * delivers a response only when it is complete and follows redirects with the Tollgate tokens. Here:
 * - redirects are never followed: a 3xx comes back as it is, so the tokens reach the configured gateway only;
 * - the body is handed over as it arrives, one [read] at a time (JavaScript pulls: at most one chunk waits per
 *   response, OkHttp's socket buffer holds the rest and TCP slows the gateway down);
 * - the body bytes are sent exactly as given (the request digest covers them).
 */
internal object NativeHttp {
    private val client: OkHttpClient = OkHttpClient.Builder()
        .followRedirects(false)
        .followSslRedirects(false)
        // A stream may pause longer than any fixed read timeout (a model thinking); JavaScript cancels with httpCancel.
        .readTimeout(0, TimeUnit.MILLISECONDS)
        .build()
    private val open = ConcurrentHashMap<String, Response>()

    /** Sends the request; returns the response id, status and header pairs once the head arrived. Blocking: call on IO. */
    fun start(url: String, method: String, headerPairs: List<String>, body: ByteArray?): Triple<String, Int, List<String>> {
        val builder = Request.Builder().url(url)
        var contentType: String? = null
        var index = 0
        while (index + 1 < headerPairs.size) {
            builder.addHeader(headerPairs[index], headerPairs[index + 1])
            if (headerPairs[index].equals("Content-Type", ignoreCase = true)) contentType = headerPairs[index + 1]
            index += 2
        }
        val upper = method.uppercase()
        val requestBody = when {
            body != null -> body.toRequestBody(contentType?.toMediaTypeOrNull())
            upper == "POST" || upper == "PUT" || upper == "PATCH" -> ByteArray(0).toRequestBody(null)
            else -> null
        }
        builder.method(upper, requestBody)
        val response = client.newCall(builder.build()).execute()
        val id = UUID.randomUUID().toString()
        open[id] = response
        val pairs = ArrayList<String>()
        for ((name, value) in response.headers) {
            pairs.add(name)
            pairs.add(value)
        }
        return Triple(id, response.code, pairs)
    }

    /** What has arrived of the body (at least one byte, at most 16 KiB), or null at its end. Blocking: call on IO. */
    fun read(id: String): ByteArray? {
        val response = open[id] ?: return null
        val source = response.body?.source()
        if (source == null || source.exhausted()) {
            close(id)
            return null
        }
        val available = minOf(source.buffer.size, 16_384L)
        return source.readByteArray(available)
    }

    /** Closes the connection (the gateway then aborts the provider request); later reads answer null. */
    fun cancel(id: String) {
        close(id)
    }

    private fun close(id: String) {
        open.remove(id)?.close()
    }
}
