package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.longOrNull
import java.time.Instant
import java.util.Base64

/**
 * What the SDK does after the gateway refused a call, by the error's `reason` (protocol.md, "Errors";
 * sdk/conformance `reason-action`).
 */
public enum class ReasonAction(public val wireName: String) {
    /** `device_revoked`: surface attestationFailed, attest no new key, refresh nothing until the process restarts. */
    STOP("stop"),

    /** `device_token_expired`, `device_token_invalid`, `device_token_missing`, or no reason: refresh with the existing key, retry once. */
    REFRESH("refresh"),

    /** `device_key_unknown`: the gateway no longer knows the key: attest a new key, retry once. */
    ATTEST("attest"),

    /** `assertion_required`: send `Tollgate-Assertion` on every request from now on, retry once. */
    ASSERT("assert"),

    /** Any other reason, or an error other than attestationFailed: surface the error, change nothing. */
    NONE("none");

    /** True when the refused call is sent once more after the action. */
    public val retryOnce: Boolean get() = this == REFRESH || this == ATTEST || this == ASSERT

    /** True when the action creates a new device key. */
    public val newKey: Boolean get() = this == ATTEST

    public companion object {
        /**
         * The action for an error of [kind] (`attestationFailed`, `rateLimited`, …) with the gateway's [reason] (null when
         * the gateway sent none: an older gateway, refreshed once as before reasons existed).
         */
        public fun of(kind: String, reason: String?): ReasonAction {
            if (kind != "attestationFailed") return NONE
            return when (reason) {
                null -> REFRESH
                "device_revoked" -> STOP
                "device_token_expired", "device_token_invalid", "device_token_missing" -> REFRESH
                "device_key_unknown" -> ATTEST
                "assertion_required" -> ASSERT
                else -> NONE
            }
        }

        /** The action for [error]. */
        public fun of(error: TollgateError): ReasonAction = of(error.kind, error.reason)
    }
}

/** When a device token expires and when to refresh it (sdk/conformance `token-expiry`, `refresh-due`). */
public object TokenExpiry {
    /** The refresh margin every SDK uses: refresh when less than min(60 s, a fifth of the lifetime) remains. */
    public const val REFRESH_MARGIN_MS: Long = 60_000L

    private val json = Json { ignoreUnknownKeys = true }

    /**
     * The earlier of the answer's `expiresAt` (ISO 8601) and the JWS `exp` claim (read without verifying: the gateway
     * verifies); an unreadable value is ignored; neither gives [receivedAtMs] (use the token once, never cache it).
     */
    public fun expiresAtMs(deviceToken: String, expiresAt: String?, receivedAtMs: Long): Long {
        val fromAnswer = expiresAt?.let { runCatching { Instant.parse(it).toEpochMilli() }.getOrNull() }
        val fromClaim = jwsExpMs(deviceToken)
        return listOfNotNull(fromAnswer, fromClaim).minOrNull() ?: receivedAtMs
    }

    /**
     * The expiry on the device clock of a token received at [receivedAtMs] (device clock). The answer's `expiresIn`
     * (seconds of lifetime) is measured from receipt and needs no clock agreement; `expiresAt` and the JWS `exp` are the
     * gateway's clock, converted with [clock]'s offset when a `Date` header gave one, and ignored when `expiresIn` is
     * there but the offset is unknown (a device clock an hour ahead would read them as already past). The earliest
     * candidate wins; none gives [receivedAtMs] (use once, never cache).
     */
    public fun expiresAtDeviceMs(deviceToken: String, expiresAt: String?, expiresInSeconds: Long?, receivedAtMs: Long, clock: ServerClock): Long {
        val fromLifetime = expiresInSeconds?.takeIf { it > 0 }?.let { receivedAtMs + it * 1000 }
        val absolute = listOfNotNull(expiresAt?.let { runCatching { Instant.parse(it).toEpochMilli() }.getOrNull() }, jwsExpMs(deviceToken)).minOrNull()
        val fromAbsolute = when {
            absolute == null -> null
            clock.isKnown -> clock.toDevice(absolute)
            fromLifetime != null -> null
            else -> absolute
        }
        return listOfNotNull(fromLifetime, fromAbsolute).minOrNull() ?: receivedAtMs
    }

    /** The `exp` claim of a compact JWS in unix ms, or null when it cannot be read. */
    public fun jwsExpMs(deviceToken: String): Long? = try {
        val parts = deviceToken.split('.')
        if (parts.size != 3) {
            null
        } else {
            val payload = json.parseToJsonElement(Base64.getUrlDecoder().decode(parts[1]).toString(Charsets.UTF_8)) as? JsonObject
            (payload?.get("exp") as? JsonPrimitive)?.takeIf { !it.isString }?.longOrNull?.let { it * 1000 }
        }
    } catch (_: Exception) {
        null
    }

    /** True when a token received at [receivedAtMs] and expiring at [expiresAtMs] must be refreshed at [nowMs]. */
    public fun refreshDue(receivedAtMs: Long, expiresAtMs: Long, nowMs: Long, marginMs: Long = REFRESH_MARGIN_MS): Boolean {
        val lifetime = (expiresAtMs - receivedAtMs).coerceAtLeast(0)
        return nowMs >= expiresAtMs - minOf(marginMs, lifetime / 5)
    }
}

/**
 * Retries of the gateway's `rateLimited` (sdk/conformance `retry`). Off by default: pass `RetryOptions()` to
 * [TollgateClient] to turn them on. Only `rateLimited` is retried (never a provider's own 429, never a networkError: the
 * request may have reached the provider).
 *
 * @property maxRetries retries after the first try.
 * @property maxWaitSeconds the most the SDK waits in total; a wait that would pass it is not started.
 */
public class RetryOptions(public val maxRetries: Int = 3, public val maxWaitSeconds: Long = 30) {
    public companion object {
        /**
         * The delay in seconds before the next try, or null to fail now. [retryAfterSeconds] is the gateway's
         * `Retry-After`; without it the back-off is 1, 2, 4, … seconds, at most 30.
         */
        public fun delaySeconds(
            options: RetryOptions?,
            errorKind: String,
            retryAfterSeconds: Long?,
            retriesDone: Int,
            waitedSeconds: Long,
        ): Long? {
            if (options == null || errorKind != "rateLimited" || retriesDone >= options.maxRetries) return null
            val delay = retryAfterSeconds ?: minOf(30L, 1L shl retriesDone.coerceAtMost(30))
            if (waitedSeconds + delay > options.maxWaitSeconds) return null
            return delay
        }
    }
}

/** The `Tollgate-Assertion` value and the Android attestation bindings (sdk/conformance `assertion-encoding`, `attestation-request`). */
public object Proofs {
    /** `Tollgate-Assertion`: base64url without padding of the proof (an Android key's DER signature). Empty is refused. */
    public fun assertionHeader(proof: ByteArray): String {
        if (proof.isEmpty()) throw TollgateError.InvalidRequest("An assertion cannot be empty.", reason = "assertion_empty")
        return base64UrlNoPad(proof)
    }

    /** The bytes given to `KeyGenParameterSpec.Builder.setAttestationChallenge`: the base64url-decoded challenge. */
    public fun keyAttestationChallenge(challenge: String): ByteArray = Base64.getUrlDecoder().decode(challenge.trimEnd('='))

    /** What a key-signature refresh signs with SHA256withECDSA: the challenge's UTF-8 bytes. */
    public fun refreshMessage(challenge: String): ByteArray = challenge.toByteArray(Charsets.UTF_8)

    /** The gateway's id of an Android key: lowercase hex SHA-256 of its SubjectPublicKeyInfo (`PublicKey.getEncoded()`). */
    public fun keyId(subjectPublicKeyInfo: ByteArray): String = Digest.sha256Hex(subjectPublicKeyInfo)

    /**
     * Play Integrity binding, the standard request's `requestHash` and the classic request's `nonce`:
     * base64url-nopad(SHA-256(UTF-8 challenge + "\n" + installation id)).
     */
    public fun playIntegrityRequestHash(challenge: String, installationId: String): String =
        base64UrlNoPad(Digest.sha256("$challenge\n$installationId".toByteArray(Charsets.UTF_8)))

    /**
     * Play Integrity in every-request mode: the standard request's `requestHash` is base64url-nopad of the 32-byte request
     * digest, and its token is sent verbatim as `Tollgate-Assertion`.
     */
    public fun playIntegrityAssertionHash(digest: ByteArray): String = base64UrlNoPad(digest)

    /** base64url (RFC 4648 §5) without padding. */
    public fun base64UrlNoPad(bytes: ByteArray): String = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes)

    /** Standard base64 with padding, as the attestation bodies carry DER certificates and signatures. */
    public fun base64(bytes: ByteArray): String = Base64.getEncoder().encodeToString(bytes)
}

/** The JSON bodies of `POST /v1/attest/{method}` (sdk/conformance `attestation-request`). */
public object AttestationBodies {
    /** `android-key-attestation`, first attestation: the chain leaf first, standard base64 DER. */
    public fun keyAttestation(challenge: String, chain: List<ByteArray>): JsonObject = JsonObject(
        mapOf("challenge" to JsonPrimitive(challenge), "chain" to kotlinx.serialization.json.JsonArray(chain.map { JsonPrimitive(Proofs.base64(it)) })),
    )

    /** `android-key-attestation`, refresh by the attested key: SHA256withECDSA over [Proofs.refreshMessage]. */
    public fun keyRefresh(challenge: String, keyId: String, signature: ByteArray): JsonObject = JsonObject(
        mapOf("challenge" to JsonPrimitive(challenge), "keyId" to JsonPrimitive(keyId), "signature" to JsonPrimitive(Proofs.base64(signature))),
    )

    /** `android-play-integrity`; [type] `standard` (the default path) or `classic` (fallback). */
    public fun playIntegrity(challenge: String, integrityToken: String, deviceId: String, type: String): JsonObject = JsonObject(
        mapOf(
            "challenge" to JsonPrimitive(challenge),
            "integrityToken" to JsonPrimitive(integrityToken),
            "deviceId" to JsonPrimitive(deviceId),
            "type" to JsonPrimitive(type),
        ),
    )

    /** `development` (emulators, debug builds): no challenge. */
    public fun development(developmentToken: String, deviceId: String): JsonObject = JsonObject(
        mapOf("developmentToken" to JsonPrimitive(developmentToken), "deviceId" to JsonPrimitive(deviceId)),
    )

    /** `apple-app-attest` (the iOS SDK's bodies; here so that the Kotlin runner checks every vector): attestation or assertion. */
    public fun appleAppAttest(keyId: String, challenge: String, attestation: ByteArray? = null, assertion: ByteArray? = null): JsonObject {
        val fields = linkedMapOf<String, kotlinx.serialization.json.JsonElement>("keyId" to JsonPrimitive(keyId), "challenge" to JsonPrimitive(challenge))
        attestation?.let { fields["attestation"] = JsonPrimitive(Proofs.base64(it)) }
        assertion?.let { fields["assertion"] = JsonPrimitive(Proofs.base64(it)) }
        return JsonObject(fields)
    }
}
