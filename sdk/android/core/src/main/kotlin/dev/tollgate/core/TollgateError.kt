package dev.tollgate.core

/**
 * Every failure the SDK reports (protocol.md, "Errors"). The five errors of the product brief (`Unauthorized`,
 * `AttestationFailed`, `RateLimited`, `SecretNotFound`, `NetworkError`) plus `InvalidRequest` and `ProviderError`, so
 * that no failure is silent. A `when` over this sealed class is exhaustive:
 *
 * ```
 * try { client.request("POST", "openai/v1/chat/completions", RequestBody.Text(json)) }
 * catch (error: TollgateError) {
 *     when (error) {
 *         is TollgateError.RateLimited -> delay((error.retryAfterSeconds ?: 1) * 1000)
 *         is TollgateError.ProviderError -> showProviderMessage(error.status, error.body)
 *         else -> showError(error.message)
 *     }
 * }
 * ```
 *
 * @property errorType the raw `Tollgate-Error` type when the gateway made the error (`providerNotFound`, `upstreamTimeout`, …), else null.
 * @property requestId the gateway's request id (body `error.requestId` or the `Tollgate-Request-Id` header), when known.
 * @property reason a stable snake_case detail (protocol.md, "Errors"): the gateway's `error.reason` (`device_revoked`,
 *   `device_token_expired`, `rate_limited_device`, …; the list is the gateway's docs/reference/errors.md), or the SDK's own
 *   (`not_initialized`, `gateway_url_missing`, `play_integrity_unavailable`, …). Null when none is known (a provider error).
 */
public sealed class TollgateError(
    message: String,
    cause: Throwable? = null,
    public val errorType: String? = null,
    public val requestId: String? = null,
    public val reason: String? = null,
) : Exception(message, cause) {
    /** The kind name used by the conformance vectors (`unauthorized`, `rateLimited`, …). */
    public abstract val kind: String

    /** The close code when a realtime session ended with this error ([RealtimeClose]), else null. */
    public var closeCode: Int? = null
        internal set

    /** True when a realtime session ended with 4503 (`draining`): the app may open a new session at once. */
    public var mayReconnect: Boolean = false
        internal set

    /** 401: the app token is missing, malformed, unknown, revoked, or the app is disabled. */
    public class Unauthorized(
        message: String = "The app token was refused.",
        errorType: String? = null,
        requestId: String? = null,
        reason: String? = null,
    ) : TollgateError(message, null, errorType, requestId, reason) {
        override val kind: String get() = "unauthorized"
    }

    /**
     * 403 from the gateway (device token refused: `device_revoked`, `device_token_expired`, `assertion_required`, …), or
     * a failure of the device's own attestation step (`play_integrity_unavailable`, `key_attestation_unavailable`, …).
     * After `device_revoked` the SDK stops: no new key, no refresh, until the app process restarts.
     */
    public class AttestationFailed(
        reason: String? = null,
        message: String = "Device attestation failed" + (reason?.let { ": $it" } ?: "."),
        cause: Throwable? = null,
        errorType: String? = null,
        requestId: String? = null,
    ) : TollgateError(message, cause, errorType, requestId, reason) {
        override val kind: String get() = "attestationFailed"
    }

    /** 429 from the gateway. [retryAfterSeconds] comes from `Retry-After` (seconds or HTTP-date), null when unknown. */
    public class RateLimited(
        public val retryAfterSeconds: Long?,
        message: String = "Rate limited" + (retryAfterSeconds?.let { "; retry after $it s." } ?: "."),
        errorType: String? = null,
        requestId: String? = null,
        reason: String? = null,
    ) : TollgateError(message, null, errorType, requestId, reason) {
        override val kind: String get() = "rateLimited"
    }

    /** 424: the app has no secret for this provider on the gateway. */
    public class SecretNotFound(
        message: String = "The gateway has no secret for this provider.",
        errorType: String? = null,
        requestId: String? = null,
        reason: String? = null,
    ) : TollgateError(message, null, errorType, requestId, reason) {
        override val kind: String get() = "secretNotFound"
    }

    /**
     * The request was refused: by the SDK before sending (unsafe endpoint, bad header; `not_initialized` before
     * `Tollgate.initialize`, `gateway_url_missing` without a gateway address), or by the gateway (400/404/405/413).
     */
    public class InvalidRequest(
        message: String,
        errorType: String? = null,
        requestId: String? = null,
        reason: String? = null,
    ) : TollgateError(message, null, errorType, requestId, reason) {
        override val kind: String get() = "invalidRequest"
    }

    /** No usable response: offline, DNS, TLS, reset, a cut or malformed stream, or the gateway could not reach the provider (502/504). */
    public class NetworkError(
        cause: Throwable? = null,
        message: String = "Network error" + (cause?.message?.let { ": $it" } ?: "."),
        errorType: String? = null,
        requestId: String? = null,
        reason: String? = null,
    ) : TollgateError(message, cause, errorType, requestId, reason) {
        override val kind: String get() = "networkError"
    }

    /** The provider answered non-2xx; its body passes through unchanged. */
    public class ProviderError(
        public val status: Int,
        public val body: String,
        public val headers: Map<String, List<String>> = emptyMap(),
        requestId: String? = null,
    ) : TollgateError("The provider answered HTTP $status.", null, null, requestId) {
        override val kind: String get() = "providerError"
    }
}
