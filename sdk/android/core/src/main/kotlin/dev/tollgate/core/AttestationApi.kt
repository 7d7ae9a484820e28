package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.time.Instant

/** A one-time challenge from `POST /v1/attest/challenge` (docs/guides/attestation.md): base64url of 32 bytes. */
public class Challenge(public val value: String, public val expiresAtMs: Long) {
    /** The raw challenge bytes, as the platform attestation APIs want them. */
    public fun bytes(): ByteArray = java.util.Base64.getUrlDecoder().decode(value)
}

/**
 * The attestation exchange over HTTP, platform-free: get a challenge, then trade a platform artifact for a device token.
 * The platform part (Play Integrity, Keystore key attestation, development token) lives in the Android module.
 */
public class AttestationApi(
    baseUrl: String,
    appToken: String,
    sdk: String,
    private val transport: HttpTransport,
    private val clock: () -> Long = System::currentTimeMillis,
    /** The gateway's clock: its offset is learnt from each answer's `Date` and converts absolute expiries. */
    private val serverClock: ServerClock = ServerClock(clock),
) {
    private val builder = RequestBuilder(baseUrl, appToken, sdk)
    private val json = Json { ignoreUnknownKeys = true }

    /** `POST /v1/attest/challenge`. */
    public suspend fun challenge(): Challenge {
        val body = post("challenge", ByteArray(0))
        val value = body.string("challenge") ?: throw malformed("challenge")
        return Challenge(value, body.string("expiresAt")?.let(::parseInstant) ?: (clock() + 5 * 60_000L))
    }

    /**
     * `POST /v1/attest/{method}` with [artifact] as the JSON body (built by [AttestationBodies]), e.g. for
     * `android-key-attestation` `{"challenge": "…", "chain": ["<base64 DER leaf>", …, "<root>"]}`. The token's expiry is
     * the earlier of `expiresAt` and the JWS `exp` ([TokenExpiry]). A 200 without a string `deviceToken` is a
     * [TollgateError.NetworkError] (the answer breaks the protocol); nothing is kept.
     */
    public suspend fun exchange(method: String, artifact: JsonObject): DeviceToken {
        val received = clock()
        val body = post(method, artifact.toString().toByteArray(Charsets.UTF_8))
        return readToken(body, received)
    }

    private fun readToken(body: JsonObject, receivedAtMs: Long): DeviceToken {
        val token = body.string("deviceToken")?.takeIf { it.isNotEmpty() } ?: throw malformed("deviceToken")
        val expiresIn = (body["expiresIn"] as? JsonPrimitive)?.takeIf { !it.isString }?.content?.toDoubleOrNull()?.toLong()
        val expiresAt = TokenExpiry.expiresAtDeviceMs(token, body.string("expiresAt"), expiresIn, receivedAtMs, serverClock)
        return DeviceToken(token, expiresAt, receivedAtMs, body.string("deviceId"))
    }

    private suspend fun post(method: String, payload: ByteArray): JsonObject {
        val headers = builder.attestHeaders().toMutableList()
        if (payload.isNotEmpty()) headers.add("Content-Type" to "application/json")
        val call = HttpCall("POST", builder.attestUrl(method), headers, payload)
        val result = try {
            transport.execute(call)
        } catch (error: TollgateError) {
            throw error
        } catch (error: kotlinx.coroutines.CancellationException) {
            throw error
        } catch (error: Exception) {
            throw ErrorMapper.noResponse(error)
        }
        val bytes = result.use {
            try {
                it.body.readBytes()
            } catch (error: java.io.IOException) {
                throw ErrorMapper.noResponse(error)
            }
        }
        serverClock.observe(result.headers, clock())
        ErrorMapper.map(result.status, result.headers, bytes, clock())?.let { throw it }
        return try {
            json.parseToJsonElement(bytes.toString(Charsets.UTF_8)) as JsonObject
        } catch (error: Exception) {
            throw TollgateError.NetworkError(error, "The gateway's attestation answer is not a JSON object.")
        }
    }

    private fun JsonObject.string(name: String): String? = (this[name] as? JsonPrimitive)?.takeIf { it.isString }?.content

    private fun parseInstant(value: String): Long? = runCatching { Instant.parse(value).toEpochMilli() }.getOrNull()

    public companion object {
        /** The body of a 200 attestation answer → [DeviceToken] (sdk/conformance `attestation-response`). */
        public fun parseAnswer(body: String, receivedAtMs: Long): DeviceToken {
            val json = try {
                Json.parseToJsonElement(body) as JsonObject
            } catch (error: Exception) {
                throw TollgateError.NetworkError(error, "The gateway's attestation answer is not a JSON object.")
            }
            val token = (json["deviceToken"] as? JsonPrimitive)?.takeIf { it.isString && it.content.isNotEmpty() }?.content
                ?: throw TollgateError.NetworkError(null, "The gateway's attestation answer has no \"deviceToken\".")
            val deviceId = (json["deviceId"] as? JsonPrimitive)?.takeIf { it.isString }?.content
            val expiresAt = (json["expiresAt"] as? JsonPrimitive)?.takeIf { it.isString }?.content
            return DeviceToken(token, TokenExpiry.expiresAtMs(token, expiresAt, receivedAtMs), receivedAtMs, deviceId)
        }
    }

    private fun malformed(field: String) = TollgateError.NetworkError(null, "The gateway's attestation answer has no \"$field\".")
}
