package dev.tollgate.core

import kotlinx.coroutines.runBlocking
import okhttp3.Interceptor
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import okio.Buffer
import java.io.IOException
import java.util.concurrent.TimeUnit

/**
 * A gateway refusal surfaced through OkHttp (whose interceptors may throw only `IOException`s): the provider SDK wraps
 * it in its own I/O error (openai-java: `OpenAIIoException`), whose cause chain holds this and so the [error].
 */
public class TollgateException(public val error: TollgateError) : IOException(error.message, error)

/**
 * An OkHttp application interceptor that routes a provider SDK through Tollgate: every request to
 * `{gateway}/v1/proxy/…` gets the Tollgate headers (app, device and user tokens, request time, assertion when the app
 * requires one), with the device token refreshed when due and the SDK's retries (a refused device token refreshed once,
 * `user_token_expired` asked once more). The provider SDK's own `Authorization` (a placeholder key: the gateway holds
 * the real one) is not sent. Answers stream through unbuffered; a provider's error passes through for the provider SDK
 * to read; a gateway refusal is thrown as [TollgateException]. Requests to any other address pass untouched, without a
 * Tollgate token.
 *
 * ```
 * val openai = OpenAIOkHttpClient.builder()
 *     .baseUrl(client.providerBaseUrl("openai/v1"))
 *     .apiKey("unused")                      // the gateway injects the key
 *     .addInterceptor(TollgateInterceptor(client))
 *     .build()
 * ```
 */
public class TollgateInterceptor(private val client: TollgateClient) : Interceptor {
    override fun intercept(chain: Interceptor.Chain): Response {
        val original = chain.request()
        val prefix = client.baseUrl + "/v1/proxy/"
        val url = original.url.toString()
        if (!url.startsWith(prefix)) return chain.proceed(original)
        val body = original.body?.let { requestBody ->
            val buffer = Buffer()
            requestBody.writeTo(buffer)
            RequestBody.Bytes(buffer.readByteArray(), requestBody.contentType()?.toString() ?: "application/octet-stream")
        }
        val headers = LinkedHashMap<String, String>()
        for (name in original.headers.names()) {
            if (name.lowercase() in DROPPED || name.startsWith("tollgate-", ignoreCase = true)) continue
            headers[name] = original.headers(name).joinToString(", ")
        }
        if (body != null && headers.keys.none { it.equals("Content-Type", ignoreCase = true) }) headers["Content-Type"] = body.defaultContentType
        val request = TollgateRequest(original.method, url.substring(prefix.length), body, emptyList(), headers)
        return try {
            runBlocking {
                client.intercept(request) { call ->
                    val builder = Request.Builder().url(call.url).tag(Any::class.java, original.tag())
                    for ((name, value) in call.headers) builder.addHeader(name, value)
                    val payload = when {
                        call.body.isNotEmpty() -> call.body.toRequestBody(null)
                        original.body != null -> ByteArray(0).toRequestBody(null)
                        else -> null
                    }
                    chain.proceed(builder.method(call.method, payload).build())
                }
            }
        } catch (error: TollgateError) {
            throw TollgateException(error)
        }
    }

    private companion object {
        /** The provider SDK's credential (a placeholder), and what OkHttp sets itself. */
        val DROPPED = setOf("authorization", "host", "connection", "content-length", "transfer-encoding", "cookie", "proxy-authorization")
    }
}

/** The base URL to give a provider SDK for [prefix] (`{provider}/{version}`), e.g. `https://gw.example.com/v1/proxy/openai/v1`. */
public fun TollgateClient.providerBaseUrl(prefix: String): String = "$baseUrl/v1/proxy/${prefix.trim('/')}"

/**
 * An OkHttp client for provider SDKs that take one (openai-java's `okHttpClient(…)`, Retrofit, Ktor's OkHttp engine),
 * built on [base] (its pool, proxy and pinning): the [TollgateInterceptor], no redirects (a redirect would carry the
 * tokens elsewhere) and 120 s between reads.
 */
public fun TollgateClient.okHttpClient(base: OkHttpClient = OkHttpClient()): OkHttpClient = base.newBuilder()
    .addInterceptor(TollgateInterceptor(this))
    .followRedirects(false)
    .followSslRedirects(false)
    .readTimeout(120, TimeUnit.SECONDS)
    .build()
