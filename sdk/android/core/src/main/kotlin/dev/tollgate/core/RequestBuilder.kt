package dev.tollgate.core

import java.nio.ByteBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction

/** A request body. A zero-length body is the same as none (no `Content-Type`, digest over empty bytes). */
public sealed class RequestBody {
    /** The bytes sent. */
    public abstract val bytes: ByteArray

    /** `Content-Type` sent when the caller gives none. */
    public abstract val defaultContentType: String

    /** UTF-8 text, by default `application/json`. */
    public class Text(public val text: String, override val defaultContentType: String = "application/json") : RequestBody() {
        override val bytes: ByteArray by lazy { text.toByteArray(Charsets.UTF_8) }
    }

    /** Raw bytes, by default `application/octet-stream`. */
    public class Bytes(override val bytes: ByteArray, override val defaultContentType: String = "application/octet-stream") : RequestBody()
}

/** One call as the app makes it. [endpoint] is `{slug}/{version}[/{path}][?{query}]`, e.g. `openai/v1/chat/completions`. */
public class TollgateRequest(
    public val method: String,
    public val endpoint: String,
    public val body: RequestBody? = null,
    public val query: List<Pair<String, String>> = emptyList(),
    public val headers: Map<String, String> = emptyMap(),
)

/** What goes on the wire, with the digest an assertion would sign. */
public class BuiltRequest(
    public val method: String,
    public val url: String,
    /** `/v1/proxy/…?query`: the path used in the digest. */
    public val pathWithQuery: String,
    /** Header names in the case sent, in the order added. */
    public val headers: List<Pair<String, String>>,
    public val body: ByteArray,
    public val bodySha256: String,
    public val canonicalRequest: String,
    public val digest: String,
)

/**
 * Validates an endpoint and builds URL, headers and request digest (sdk/conformance/README.md, "request-building.json").
 * Every refusal is a [TollgateError.InvalidRequest] thrown before anything is sent.
 *
 * @param baseUrl the gateway, e.g. `https://gateway.example.com` (a path prefix is allowed; it is not part of the digest).
 * @param sdk the `Tollgate-SDK` value, e.g. `android/1.2.0`.
 */
public class RequestBuilder(baseUrl: String, private val appToken: String, private val sdk: String) {
    private val base: String

    init {
        if (!BASE_URL.matches(baseUrl)) throw invalid("The base URL must be http(s)://host[:port][/path], without query, fragment or user info: \"$baseUrl\".")
        base = baseUrl.trimEnd('/')
        checkHeaderValue("Tollgate-App-Token", appToken)
        checkHeaderValue("Tollgate-SDK", sdk)
    }

    /** Builds [request] with [deviceToken], stamped with [requestTimeMs]. */
    public fun build(request: TollgateRequest, deviceToken: String, requestTimeMs: Long): BuiltRequest {
        if (!METHOD.matches(request.method)) throw invalid("The HTTP method must be letters only: \"${request.method}\".")
        val method = request.method.uppercase()
        val (path, rawQuery) = checkEndpoint(request.endpoint)

        val queryParts = ArrayList<String>()
        if (!rawQuery.isNullOrEmpty()) queryParts.add(rawQuery)
        for ((name, value) in request.query) queryParts.add("${encodeComponent(name)}=${encodeComponent(value)}")
        val pathWithQuery = "/v1/proxy/$path" + if (queryParts.isEmpty()) "" else "?" + queryParts.joinToString("&")

        val body = request.body?.bytes ?: ByteArray(0)
        val headers = ArrayList<Pair<String, String>>()
        for ((name, value) in request.headers) {
            if (!TOKEN.matches(name)) throw invalid("Not a valid header name: \"$name\".")
            if (name.startsWith("tollgate-", ignoreCase = true)) throw invalid("Tollgate-* headers are set by the SDK, not by the caller: \"$name\".")
            checkHeaderValue(name, value)
            headers.add(name to value)
        }
        checkHeaderValue("Tollgate-Device-Token", deviceToken)
        headers.add("Tollgate-App-Token" to appToken)
        headers.add("Tollgate-Device-Token" to deviceToken)
        headers.add("Tollgate-Request-Time" to requestTimeMs.toString())
        headers.add("Tollgate-SDK" to sdk)
        if (body.isNotEmpty() && headers.none { it.first.equals("Content-Type", ignoreCase = true) }) {
            headers.add("Content-Type" to request.body!!.defaultContentType)
        }

        val bodySha256 = Digest.sha256Hex(body)
        val canonical = "$method\n$pathWithQuery\n$requestTimeMs\n$bodySha256"
        return BuiltRequest(
            method = method,
            url = base + pathWithQuery,
            pathWithQuery = pathWithQuery,
            headers = headers,
            body = body,
            bodySha256 = bodySha256,
            canonicalRequest = canonical,
            digest = Digest.sha256Hex(canonical.toByteArray(Charsets.UTF_8)),
        )
    }

    /**
     * A gateway route of the device's own (`GET /v1/me`) with the headers of a proxied request and its digest over an
     * empty body. [pathWithQuery] is one of the SDK's fixed routes, never caller input.
     */
    public fun buildRoute(method: String, pathWithQuery: String, deviceToken: String, requestTimeMs: Long): BuiltRequest {
        if (!pathWithQuery.startsWith("/v1/") || pathWithQuery.startsWith("/v1/proxy/")) throw invalid("Not a gateway route: \"$pathWithQuery\".")
        checkHeaderValue("Tollgate-Device-Token", deviceToken)
        val headers = listOf(
            "Tollgate-App-Token" to appToken,
            "Tollgate-Device-Token" to deviceToken,
            "Tollgate-Request-Time" to requestTimeMs.toString(),
            "Tollgate-SDK" to sdk,
        )
        val bodySha256 = Digest.sha256Hex(ByteArray(0))
        val canonical = "${method.uppercase()}\n$pathWithQuery\n$requestTimeMs\n$bodySha256"
        return BuiltRequest(method.uppercase(), base + pathWithQuery, pathWithQuery, headers, ByteArray(0), bodySha256, canonical,
            Digest.sha256Hex(canonical.toByteArray(Charsets.UTF_8)))
    }

    /** The gateway's base URL without a trailing slash. */
    public val baseUrl: String get() = base

    /** URL of a non-proxy gateway route, e.g. `attestUrl("challenge")` → `{base}/v1/attest/challenge`. */
    public fun attestUrl(method: String): String {
        if (!SLUG.matches(method)) throw invalid("Not an attestation method: \"$method\".")
        return "$base/v1/attest/$method"
    }

    /**
     * Header values for the attestation routes, which take the app token only (sdk/conformance `attestation-request`:
     * exactly `Tollgate-App-Token`, plus `Content-Type` when there is a body).
     */
    public fun attestHeaders(): List<Pair<String, String>> = listOf("Tollgate-App-Token" to appToken)

    public companion object {
        private val BASE_URL = Regex("^(?i:https?)://[^/?#@\\s]+(/[^?#\\s]*)?$")
        private val METHOD = Regex("^[A-Za-z]+$")
        private val SLUG = Regex("^[a-z0-9][a-z0-9-]{0,39}$")
        private val VERSION = Regex("^v[0-9][a-z0-9.-]{0,15}$")
        private val PATH_CHARS = Regex("^[A-Za-z0-9\\-._~!$&'()*+,;=:@%/]*$")
        private val QUERY_CHARS = Regex("^[A-Za-z0-9\\-._~!$&'()*+,;=:@%/?]*$")
        private val BAD_PERCENT = Regex("%(?![0-9A-Fa-f]{2})")
        private val CONTROL = Regex("[\\u0000-\\u001f\\u007f-\\u009f]")
        private val SCHEME = Regex("^[A-Za-z][A-Za-z0-9+.\\-]*:")
        private val TOKEN = Regex("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
        private const val UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        private const val MAX_DECODE_ROUNDS = 3

        /**
         * Checks an endpoint and returns its path (`slug/version[/provider_path]`, leading `/` removed) and raw query.
         * The provider path is checked as the gateway checks it (core/pipeline/proxy-path.ts), so that an unsafe path
         * never leaves the device.
         */
        public fun checkEndpoint(endpoint: String): Pair<String, String?> {
            val trimmed = if (endpoint.startsWith("/")) endpoint.substring(1) else endpoint
            if (trimmed.contains('#')) throw invalid("The endpoint must not contain a fragment ('#').")
            val questionMark = trimmed.indexOf('?')
            val path = if (questionMark < 0) trimmed else trimmed.substring(0, questionMark)
            val rawQuery = if (questionMark < 0) null else trimmed.substring(questionMark + 1)
            if (rawQuery != null && !QUERY_CHARS.matches(rawQuery)) throw invalid("The endpoint's query has characters that must be percent-encoded.")
            if (!PATH_CHARS.matches(path)) throw invalid("The endpoint has characters that must be percent-encoded (spaces, non-ASCII, '\\', control characters).")
            if (BAD_PERCENT.containsMatchIn(path) || (rawQuery != null && BAD_PERCENT.containsMatchIn(rawQuery))) {
                throw invalid("The endpoint has a '%' not followed by two hex digits.")
            }
            if (path.contains("//") || path.startsWith("/")) throw invalid("The endpoint must not contain an empty segment ('//').")
            val parts = path.split('/', limit = 3)
            if (parts.size < 2 || !SLUG.matches(parts[0]) || !VERSION.matches(parts[1])) {
                throw invalid("The endpoint must look like {provider}/{version}/{path}, e.g. openai/v1/chat/completions: \"$endpoint\".")
            }
            if (parts.size == 3) checkProviderPath(parts[2])
            return path to rawQuery
        }

        private fun checkProviderPath(raw: String) {
            var current = raw
            checkDecoded(current)
            repeat(MAX_DECODE_ROUNDS) {
                val decoded = percentDecode(current)
                if (decoded == current) return
                checkDecoded(decoded)
                current = decoded
            }
            throw invalid("The provider path is percent-encoded too many times.")
        }

        private fun checkDecoded(path: String) {
            val reason = when {
                CONTROL.containsMatchIn(path) -> "a control character"
                path.contains('\\') -> "a backslash"
                path.contains('@') -> "'@'"
                path.contains("//") -> "an empty segment ('//')"
                path.startsWith("/") -> "an absolute path"
                SCHEME.containsMatchIn(path) || path.contains("://") -> "a URL scheme"
                path.split('/').any { it == "." || it == ".." } -> "a dot segment ('.' or '..')"
                else -> return
            }
            throw invalid("The provider path is not allowed: it contains $reason.")
        }

        /** Percent-decodes as UTF-8; malformed escapes or bytes that are not UTF-8 are refused. `+` stays `+`. */
        private fun percentDecode(value: String): String {
            if (!value.contains('%')) return value
            val bytes = java.io.ByteArrayOutputStream(value.length)
            var index = 0
            while (index < value.length) {
                val char = value[index]
                if (char == '%') {
                    if (index + 2 >= value.length) throw invalid("Malformed percent-encoding in the endpoint.")
                    val high = Character.digit(value[index + 1], 16)
                    val low = Character.digit(value[index + 2], 16)
                    if (high < 0 || low < 0) throw invalid("Malformed percent-encoding in the endpoint.")
                    bytes.write(high * 16 + low)
                    index += 3
                } else {
                    val encoded = char.toString().toByteArray(Charsets.UTF_8)
                    bytes.write(encoded, 0, encoded.size)
                    index += 1
                }
            }
            val decoder = Charsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
            return try {
                decoder.decode(ByteBuffer.wrap(bytes.toByteArray())).toString()
            } catch (_: CharacterCodingException) {
                throw invalid("The endpoint's percent-encoding is not UTF-8.")
            }
        }

        /** Percent-encodes every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` (uppercase hex; a space is `%20`). */
        public fun encodeComponent(value: String): String {
            val out = StringBuilder(value.length)
            for (byte in value.toByteArray(Charsets.UTF_8)) {
                val code = byte.toInt() and 0xff
                if (code < 0x80 && UNRESERVED.indexOf(code.toChar()) >= 0) {
                    out.append(code.toChar())
                } else {
                    out.append('%').append("0123456789ABCDEF"[code ushr 4]).append("0123456789ABCDEF"[code and 0x0f])
                }
            }
            return out.toString()
        }

        private fun checkHeaderValue(name: String, value: String) {
            if (value.any { it == '\r' || it == '\n' || it == '\u0000' }) throw invalid("The value of header \"$name\" contains CR, LF or NUL.")
        }

        private fun invalid(message: String) = TollgateError.InvalidRequest(message)
    }
}
