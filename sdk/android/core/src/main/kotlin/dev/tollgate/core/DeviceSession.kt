package dev.tollgate.core

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock

/**
 * The platform's attestation steps (Android: Keystore key attestation, Play Integrity, development tokens). Each call
 * fetches its own challenge from [AttestationApi.challenge] (one challenge per exchange) and trades the platform proof
 * with [AttestationApi.exchange]. The lifecycle decisions (when to refresh, when a new key is allowed, what a refusal
 * means) are [DeviceSession]'s, not the attestor's.
 */
public interface Attestor {
    /**
     * Earns a token with the identity this device already has: a signature by the attested key, a Play Integrity request
     * with the same installation id, or a development token. Null when the device has no identity yet.
     * Throws [TollgateError] (the gateway's refusal, with its reason).
     */
    public suspend fun refresh(api: AttestationApi): DeviceToken?

    /**
     * Creates a new identity (a new attested key) and earns a token with it. [DeviceSession] calls it only when the
     * device has none, or when the gateway answered `device_key_unknown`; never after `device_revoked`.
     */
    public suspend fun attestNewKey(api: AttestationApi): DeviceToken

    /** A signature (DER) by the attested key over the 32-byte request [digest], or null when the device has no key. */
    public suspend fun sign(digest: ByteArray): ByteArray?

    /**
     * The `Tollgate-Assertion` value for a request [digest] (docs/guides/attestation.md, "Every-request mode"): for a
     * key-attested device the key's signature ([sign], base64url); a Play Integrity device overrides this with the
     * verbatim token of a standard request whose `requestHash` is [Proofs.playIntegrityAssertionHash] of the digest.
     * Null when the device cannot prove requests.
     */
    public suspend fun assertion(digest: ByteArray): String? = sign(digest)?.let(Proofs::assertionHeader)

    /** Prepares what the first attestation or assertion needs (Android: the Play Integrity standard provider); no network to the gateway. */
    public suspend fun warmUp() {}
}

/**
 * The device-token lifecycle, shared by the Android SDK and the Flutter and React Native plugins (which reach it through
 * their bridges). Platform-free: the platform part is the [Attestor].
 *
 * - The stored token is used until it is due ([TokenExpiry.refreshDue]: min(60 s, a fifth of its lifetime) before it
 *   expires, the expiry being the earlier of `expiresAt` and the JWS `exp`).
 * - A refresh uses the existing identity ([Attestor.refresh]); a new key is attested only when there is none, or after
 *   `device_key_unknown`.
 * - `device_revoked` (on a call or on a refresh) stops the session: the stored token is dropped, every later
 *   [deviceToken] throws [TollgateError.AttestationFailed] with reason `device_revoked` without touching the network,
 *   and no key is ever created, until the process restarts (a new [DeviceSession]).
 * - `assertion_required` turns per-request proofs ([assertion]) on for the rest of the process.
 * Concurrent callers share one attestation.
 */
public class DeviceSession(
    private val api: AttestationApi,
    private val attestor: Attestor,
    private val store: DeviceTokenStore? = null,
    private val clock: () -> Long = System::currentTimeMillis,
    sendAssertions: Boolean = false,
    /** True to start stopped: a session that replaces a revoked one in the same process. */
    revoked: Boolean = false,
) : DeviceTokenSource {
    private val mutex = Mutex()
    private var held: DeviceToken? = null
    private var loaded = false
    private var newKeyNeeded = false

    @Volatile
    private var revoked = revoked

    @Volatile
    private var assertions = sendAssertions

    /** True after the gateway answered `device_revoked`, for the rest of this process. */
    public val isRevoked: Boolean get() = revoked

    /** True when a `Tollgate-Assertion` goes with every request (after `assertion_required`). */
    public val assertionsRequired: Boolean get() = assertions

    override suspend fun deviceToken(): String = current(forceRefresh = false).token

    /**
     * The current token: the stored one when it is not due for refresh (and [forceRefresh] is false), else a refreshed
     * one. Throws [TollgateError]; after `device_revoked`, [TollgateError.AttestationFailed] with that reason.
     */
    public suspend fun current(forceRefresh: Boolean = false): DeviceToken = mutex.withLock {
        if (revoked) throw revokedError()
        if (!loaded) {
            loaded = true
            held = held ?: runCatching { store?.load() }.getOrNull()
        }
        val cached = held
        if (!forceRefresh && cached != null && !TokenExpiry.refreshDue(cached.receivedAtMs, cached.expiresAtMs, clock())) {
            return@withLock cached
        }
        val fresh = obtain()
        held = fresh
        // A token without a readable expiry is used for this call only, never kept.
        runCatching { store?.save(fresh.takeIf { it.expiresAtMs > it.receivedAtMs }) }
        fresh
    }

    /** Refresh with the existing identity, else (none yet, or `device_key_unknown`) attest a new key; `device_revoked` stops. */
    private suspend fun obtain(): DeviceToken {
        var newKey = newKeyNeeded
        while (true) {
            try {
                val token = if (newKey) attestor.attestNewKey(api) else (attestor.refresh(api) ?: attestor.attestNewKey(api))
                newKeyNeeded = false
                return token
            } catch (error: CancellationException) {
                throw error
            } catch (error: TollgateError) {
                when (ReasonAction.of(error)) {
                    ReasonAction.STOP -> {
                        stop()
                        throw error
                    }
                    // The gateway no longer knows the key: one new key, once.
                    ReasonAction.ATTEST -> if (!newKey) newKey = true else throw error
                    else -> throw error
                }
            }
        }
    }

    override suspend fun report(token: String?, error: TollgateError): ReasonAction = report(token, error.kind, error.reason)

    /**
     * The gateway refused a call made with [token] with an error of [kind] and [reason]: applies the action and returns
     * it (`stop`: the session stops; `refresh`: the token is dropped and the next [current] refreshes with the existing
     * key; `attest`: the next [current] attests a new key; `assert`: assertions from now on; `none`: nothing).
     */
    public suspend fun report(token: String?, kind: String, reason: String?): ReasonAction {
        val action = ReasonAction.of(kind, reason)
        mutex.withLock {
            val same = token == null || held == null || held?.token == token
            when (action) {
                ReasonAction.STOP -> stop()
                ReasonAction.REFRESH -> if (same) forget()
                ReasonAction.ATTEST -> if (same) {
                    forget()
                    newKeyNeeded = true
                }
                ReasonAction.ASSERT -> assertions = true
                ReasonAction.NONE -> Unit
            }
        }
        return action
    }

    /** `Tollgate-Assertion` over the 32-byte request digest when assertions are on and the device has a key; else null. */
    override suspend fun assertion(digest: ByteArray): String? {
        if (!assertions || revoked) return null
        return attestor.assertion(digest)
    }

    /**
     * Starts the attestor's warm-up in [scope] (the SDK calls it at initialize, so that the Play Integrity provider is
     * ready before the first request needs it). Failures are left for the request that needs it.
     */
    public fun warmUpIn(scope: kotlinx.coroutines.CoroutineScope): kotlinx.coroutines.Job = scope.launch {
        try {
            attestor.warmUp()
        } catch (error: CancellationException) {
            throw error
        } catch (_: Exception) {
        }
    }

    /** Forgets the token (memory and store). A revoked session stays stopped until the process restarts. */
    public suspend fun clear() {
        mutex.withLock {
            loaded = true
            forget()
            newKeyNeeded = false
        }
    }

    private fun forget() {
        held = null
        runCatching { store?.save(null) }
    }

    private fun stop() {
        revoked = true
        forget()
    }

    private fun revokedError() = TollgateError.AttestationFailed(
        reason = REVOKED,
        message = "This device has been revoked by the gateway's operator; the SDK makes no new attestation until the app restarts.",
    )

    public companion object {
        /** The gateway's reason for a revoked device. */
        public const val REVOKED: String = "device_revoked"
    }
}

/**
 * Holds what [initialize]-style set-up produced, and refuses use before it (sdk/conformance `not-initialized`):
 * [TollgateError.InvalidRequest] with reason `not_initialized`, or `gateway_url_missing` when set-up found no gateway
 * address. Nothing is sent in either case.
 */
public class Initialization<T : Any> {
    @Volatile
    private var value: T? = null

    @Volatile
    private var missingGatewayUrl = false

    /** True once [ready] has run. */
    public val isReady: Boolean get() = value != null

    public fun ready(value: T) {
        this.value = value
        missingGatewayUrl = false
    }

    /** Set-up ran but found no gateway address. */
    public fun gatewayUrlMissing() {
        value = null
        missingGatewayUrl = true
    }

    /** The value, or the `not_initialized` / `gateway_url_missing` error. */
    public fun get(): T = value ?: throw if (missingGatewayUrl) gatewayUrlMissingError() else notInitializedError()

    public companion object {
        public const val NOT_INITIALIZED: String = "not_initialized"
        public const val GATEWAY_URL_MISSING: String = "gateway_url_missing"

        public fun notInitializedError(): TollgateError.InvalidRequest = TollgateError.InvalidRequest(
            "Tollgate is not initialized: call Tollgate.initialize(context, appToken) in Application.onCreate before any request.",
            reason = NOT_INITIALIZED,
        )

        public fun gatewayUrlMissingError(): TollgateError.InvalidRequest = TollgateError.InvalidRequest(
            "No gateway address: set <meta-data android:name=\"dev.tollgate.GATEWAY_URL\" android:value=\"https://…\"/> in the " +
                "<application> of AndroidManifest.xml, or pass it to Tollgate.initialize.",
            reason = GATEWAY_URL_MISSING,
        )
    }
}
