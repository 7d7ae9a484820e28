package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.time.ZonedDateTime
import java.time.format.DateTimeFormatter
import java.time.format.DateTimeParseException

/**
 * Turns an HTTP response into a [TollgateError] (protocol.md, "Errors"; sdk/conformance/README.md, "error-mapping.json").
 *
 * - a 2xx is never an error;
 * - a non-2xx with a `Tollgate-Error` header is the gateway's error, and the header decides the kind (the body may be
 *   missing or not JSON);
 * - a non-2xx without it is the provider's own answer: [TollgateError.ProviderError] with the body passed through, even
 *   for 401 and 429.
 */
public object ErrorMapper {
    private val json = Json { ignoreUnknownKeys = true }

    /** A gateway reason is snake_case (protocol.md, "Errors"); anything else is read as none. */
    private val REASON = Regex("^[a-z][a-z0-9]*(_[a-z0-9]+)*$")

    /**
     * @param headers response headers; names are matched case-insensitively.
     * @param nowMs the client's clock, for a `Retry-After` HTTP-date.
     * @return null for a 2xx.
     */
    public fun map(status: Int, headers: Map<String, List<String>>, body: ByteArray?, nowMs: Long): TollgateError? {
        if (status in 200..299) return null
        val type = Headers.first(headers, "Tollgate-Error")?.trim()
        val bodyText = body?.toString(Charsets.UTF_8) ?: ""
        val headerRequestId = Headers.first(headers, "Tollgate-Request-Id")?.trim()
        if (type == null) return TollgateError.ProviderError(status, bodyText, headers, headerRequestId)

        val error = parseErrorBody(bodyText)
        val message = error?.get("message")?.stringOrNull() ?: defaultMessage(type, status)
        val requestId = error?.get("requestId")?.stringOrNull() ?: headerRequestId
        val reason = error?.get("reason")?.stringOrNull()?.takeIf { REASON.matches(it) }
        val kind = when (type) {
            "unauthorized" -> "unauthorized"
            "attestationFailed" -> "attestationFailed"
            "rateLimited" -> "rateLimited"
            "secretNotFound" -> "secretNotFound"
            "providerNotFound", "invalidRequest" -> "invalidRequest"
            "upstreamUnavailable", "upstreamTimeout" -> "networkError"
            // A type this SDK does not know (e.g. internalError): decide by status so that nothing is silent.
            else -> when {
                status == 401 -> "unauthorized"
                status == 403 -> "attestationFailed"
                status == 424 -> "secretNotFound"
                status == 429 -> "rateLimited"
                status in 500..599 -> "networkError"
                else -> "invalidRequest"
            }
        }
        return when (kind) {
            "unauthorized" -> TollgateError.Unauthorized(message, type, requestId, reason)
            "attestationFailed" -> TollgateError.AttestationFailed(
                reason = reason, message = message, errorType = type, requestId = requestId,
            )
            "rateLimited" -> TollgateError.RateLimited(
                parseRetryAfter(Headers.first(headers, "Retry-After"), nowMs), message, type, requestId, reason,
            )
            "secretNotFound" -> TollgateError.SecretNotFound(message, type, requestId, reason)
            "networkError" -> TollgateError.NetworkError(null, message, type, requestId, reason)
            else -> TollgateError.InvalidRequest(message, type, requestId, reason)
        }
    }

    /** No response at all (offline, DNS, TLS, reset, timeout). */
    public fun noResponse(cause: Throwable?): TollgateError.NetworkError = TollgateError.NetworkError(cause)

    /**
     * `Retry-After` (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date turned into seconds from [nowMs], rounded up and
     * at least 0. Null when absent or unparseable.
     */
    public fun parseRetryAfter(value: String?, nowMs: Long): Long? {
        val trimmed = value?.trim() ?: return null
        if (trimmed.isEmpty()) return null
        if (trimmed.all { it in '0'..'9' }) return trimmed.toBigInteger().min(Long.MAX_VALUE.toBigInteger()).toLong()
        val date = try {
            // RFC_1123_DATE_TIME reads IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
            ZonedDateTime.parse(trimmed, DateTimeFormatter.RFC_1123_DATE_TIME)
        } catch (_: DateTimeParseException) {
            return null
        }
        val deltaMs = date.toInstant().toEpochMilli() - nowMs
        if (deltaMs <= 0) return 0
        return (deltaMs + 999) / 1000
    }

    private fun parseErrorBody(text: String): JsonObject? = try {
        (json.parseToJsonElement(text) as? JsonObject)?.get("error") as? JsonObject
    } catch (_: Exception) {
        null
    }

    private fun kotlinx.serialization.json.JsonElement.stringOrNull(): String? =
        (this as? JsonPrimitive)?.takeIf { it.isString }?.content

    private fun defaultMessage(type: String, status: Int): String = "The gateway refused the request ($type, HTTP $status)."
}

/** Case-insensitive header look-up over the `Map<String, List<String>>` shape both java.net.http and OkHttp produce. */
public object Headers {
    /** The first value of header [name] (any case), or null. */
    public fun first(headers: Map<String, List<String>>, name: String): String? {
        for ((key, values) in headers) {
            if (key.equals(name, ignoreCase = true) && values.isNotEmpty()) return values.first()
        }
        return null
    }

    /** Builds the map from name/value pairs, keeping repeated names. */
    public fun of(pairs: List<Pair<String, String>>): Map<String, List<String>> {
        val out = LinkedHashMap<String, MutableList<String>>()
        for ((name, value) in pairs) out.getOrPut(name) { ArrayList() }.add(value)
        return out
    }
}
