package dev.tollgate.core

import kotlinx.coroutines.future.await
import java.io.Closeable
import java.io.InputStream
import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import java.time.Duration

/** One HTTP exchange as the SDK wants it sent. */
public class HttpCall(
    public val method: String,
    public val url: String,
    public val headers: List<Pair<String, String>>,
    public val body: ByteArray,
)

/** A response head with its body still to read; close it when done (closing early aborts the request). */
public class HttpResult(
    public val status: Int,
    public val headers: Map<String, List<String>>,
    public val body: InputStream,
) : Closeable {
    override fun close(): Unit = body.close()
}

/**
 * Sends HTTP requests. Must not follow redirects (a 3xx is reported as it is) and must not buffer the response body.
 * Throws any exception for "no response"; the client reports it as [TollgateError.NetworkError].
 *
 * The JVM implementation is [JavaNetHttpTransport]; Android, which has no `java.net.http`, uses an OkHttp transport
 * (module `sdk/android/tollgate`).
 */
public interface HttpTransport {
    public suspend fun execute(call: HttpCall): HttpResult
}

/** [HttpTransport] over `java.net.http.HttpClient` (JDK 11+; not available on Android). */
public class JavaNetHttpTransport(
    private val client: HttpClient = HttpClient.newBuilder()
        .followRedirects(HttpClient.Redirect.NEVER)
        .connectTimeout(Duration.ofSeconds(15))
        .build(),
    /** Time allowed until the response head arrives; null for none. Streams may then run as long as they need. */
    private val headTimeout: Duration? = Duration.ofSeconds(120),
) : HttpTransport {
    override suspend fun execute(call: HttpCall): HttpResult {
        val builder = HttpRequest.newBuilder(URI.create(call.url))
        for ((name, value) in call.headers) {
            try {
                builder.header(name, value)
            } catch (error: IllegalArgumentException) {
                // java.net.http refuses restricted headers (Host, Connection, Content-Length, Expect, Upgrade).
                throw TollgateError.InvalidRequest("The header \"$name\" cannot be set: ${error.message}")
            }
        }
        headTimeout?.let { builder.timeout(it) }
        val publisher = if (call.body.isEmpty()) HttpRequest.BodyPublishers.noBody() else HttpRequest.BodyPublishers.ofByteArray(call.body)
        builder.method(call.method, publisher)
        val response = client.sendAsync(builder.build(), HttpResponse.BodyHandlers.ofInputStream()).await()
        return HttpResult(response.statusCode(), response.headers().map(), response.body())
    }
}
