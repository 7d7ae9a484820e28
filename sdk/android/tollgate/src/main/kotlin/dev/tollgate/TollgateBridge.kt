package dev.tollgate

import android.content.Context
import android.util.Base64
import dev.tollgate.core.DeviceSession
import dev.tollgate.core.TollgateError
import kotlinx.coroutines.CancellationException

/**
 * The one native interface the Flutter plugin (MethodChannel `dev.tollgate/native`) and the React Native module
 * (`TollgateNative`) expose to Dart and TypeScript. The device-token lifecycle is [Tollgate.session]'s (this SDK's
 * [DeviceSession]): the plugins make no key and hold no token of their own. Every method takes and returns plain maps
 * (String keys; String, Boolean, Long, null values) that both channels carry as they are.
 *
 * | method | arguments | result |
 * |---|---|---|
 * | [getConfiguration] | — | `{gatewayUrl: String?}` |
 * | [configure] | `{appToken, gatewayUrl, developmentToken?}` | null |
 * | [deviceToken] | `{forceRefresh: Boolean}` | `{deviceToken, expiresAtMs, deviceId?}` |
 * | [reportError] | `{deviceToken?, reason?}` | `{action: "stop"/"refresh"/"attest"/"assert"/"none"}` |
 * | [assertion] | `{digest: base64 of the 32-byte request digest}` | `{assertion: String?}` |
 * | [clear] | — | null |
 *
 * Failures are [Failure]s: `code` is the SDK error kind (`attestationFailed`, `invalidRequest`, `networkError`, …),
 * `reason` the gateway's or the SDK's reason (`device_revoked`, `not_initialized`, …).
 */
public object TollgateBridge {
    /** A failure as both channels report it: `code` (the error kind), a message, and the reason (may be null). */
    public class Failure(public val code: String, public val message: String, public val reason: String?)

    /** `getConfiguration()`: the gateway address from the manifest meta-data `dev.tollgate.GATEWAY_URL`. */
    @JvmStatic
    public fun getConfiguration(context: Context): Map<String, Any?> = mapOf("gatewayUrl" to Tollgate.gatewayUrlFromManifest(context))

    /**
     * `configure({appToken, gatewayUrl, developmentToken})`: sets the SDK up (same as [Tollgate.initialize]). A
     * [developmentToken] is used only in a debuggable app (development attestation, `POST /v1/attest/development`).
     */
    @JvmStatic
    public fun configure(context: Context, appToken: String, gatewayUrl: String?, developmentToken: String?) {
        if (appToken.isBlank()) throw TollgateError.InvalidRequest("configure needs an appToken.", reason = "app_token_missing")
        Tollgate.initialize(context, appToken, TollgateConfiguration(gatewayUrl = gatewayUrl, developmentToken = developmentToken?.takeIf { it.isNotBlank() }))
    }

    /**
     * `deviceToken({forceRefresh})`: the stored token when it is not due for refresh, else a refreshed one (key
     * signature, Play Integrity standard request or development token), else a new key (only when there is none, or
     * after `device_key_unknown`). After `device_revoked`: [TollgateError.AttestationFailed] with that reason, until the
     * process restarts.
     */
    public suspend fun deviceToken(forceRefresh: Boolean): Map<String, Any?> {
        val token = Tollgate.session.current(forceRefresh)
        return mapOf("deviceToken" to token.token, "expiresAtMs" to token.expiresAtMs, "deviceId" to token.deviceId)
    }

    /** `reportError({deviceToken, reason})`: the gateway refused a call with attestationFailed and [reason]; applies and returns the action. */
    public suspend fun reportError(deviceToken: String?, reason: String?): Map<String, Any?> {
        val action = Tollgate.session.report(deviceToken, "attestationFailed", reason)
        return mapOf("action" to action.wireName)
    }

    /**
     * `assertion({digest})`: the key's signature over the 32-byte request digest as `Tollgate-Assertion` (base64url, no
     * padding), or null when per-request proofs are off (until the gateway's `assertion_required`) or there is no key.
     */
    public suspend fun assertion(digestBase64: String): Map<String, Any?> {
        val digest = try {
            // Standard base64 as specified; the URL-safe alphabet is accepted too.
            Base64.decode(digestBase64, if (digestBase64.any { it == '-' || it == '_' }) Base64.URL_SAFE else Base64.DEFAULT)
        } catch (_: IllegalArgumentException) {
            null
        }
        if (digest == null || digest.size != 32) throw TollgateError.InvalidRequest("digest must be the base64 of 32 bytes.", reason = "digest_invalid")
        return mapOf("assertion" to Tollgate.session.assertion(digest))
    }

    /** `clear()`: forgets the stored device token (a revoked session stays stopped until the process restarts). */
    public suspend fun clear() {
        if (Tollgate.isInitialized) Tollgate.session.clear()
    }

    /** The channel form of any failure: a [TollgateError] keeps its kind and reason; anything else is an invalidRequest. */
    @JvmStatic
    public fun failure(error: Throwable): Failure = when (error) {
        is TollgateError -> Failure(error.kind, error.message ?: error.kind, error.reason)
        is CancellationException -> Failure("networkError", "Cancelled.", "cancelled")
        else -> Failure("invalidRequest", error.message ?: error.toString(), "native_error")
    }
}
