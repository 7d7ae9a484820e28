package dev.tollgate.core

import java.security.MessageDigest

/**
 * The request digest of protocol.md ("Headers the SDK sends"):
 * `SHA-256( METHOD "\n" path-with-query "\n" Tollgate-Request-Time "\n" hex(SHA-256(body)) )`, as lowercase hex.
 * This is what a `Tollgate-Assertion` signs.
 */
public object Digest {
    private val HEX = "0123456789abcdef".toCharArray()

    /** SHA-256 of [bytes]. */
    public fun sha256(bytes: ByteArray): ByteArray = MessageDigest.getInstance("SHA-256").digest(bytes)

    /** Lowercase hex SHA-256 of [bytes] (of zero bytes for an absent body). */
    public fun sha256Hex(bytes: ByteArray): String = hex(sha256(bytes))

    /** The digest input: `METHOD\npathWithQuery\nrequestTime\nbodySha256Hex`. */
    public fun canonicalRequest(method: String, pathWithQuery: String, requestTimeMs: Long, body: ByteArray): String =
        "$method\n$pathWithQuery\n$requestTimeMs\n${sha256Hex(body)}"

    /** Lowercase hex request digest. */
    public fun requestDigest(method: String, pathWithQuery: String, requestTimeMs: Long, body: ByteArray): String =
        sha256Hex(canonicalRequest(method, pathWithQuery, requestTimeMs, body).toByteArray(Charsets.UTF_8))

    /** Lowercase hex of [bytes]. */
    public fun hex(bytes: ByteArray): String {
        val out = CharArray(bytes.size * 2)
        for (index in bytes.indices) {
            val value = bytes[index].toInt() and 0xff
            out[index * 2] = HEX[value ushr 4]
            out[index * 2 + 1] = HEX[value and 0x0f]
        }
        return String(out)
    }

    /** Bytes of an even-length hex string (either case). */
    public fun unhex(hex: String): ByteArray {
        require(hex.length % 2 == 0) { "odd-length hex" }
        return ByteArray(hex.length / 2) { index -> hex.substring(index * 2, index * 2 + 2).toInt(16).toByte() }
    }
}
