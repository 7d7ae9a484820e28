package dev.tollgate.core

import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock

/** A device token from `POST /v1/attest/{method}` (protocol.md, "Device tokens"). */
public class DeviceToken(
    public val token: String,
    /** Unix ms after which the gateway refuses it. */
    public val expiresAtMs: Long,
    /** Unix ms when it was received (to size the refresh margin). */
    public val receivedAtMs: Long,
) {
    override fun toString(): String = "DeviceToken(expiresAtMs=$expiresAtMs)"
}

/** Where the client gets its `Tollgate-Device-Token`. */
public interface DeviceTokenSource {
    /** A token valid for at least the refresh margin; attests when needed. Throws [TollgateError]. */
    public suspend fun deviceToken(): String

    /** The gateway refused [token] (attestationFailed): forget it so that the next call attests again. */
    public suspend fun invalidate(token: String)
}

/** A fixed token (tests, server-side tools). */
public class StaticDeviceToken(private val token: String) : DeviceTokenSource {
    override suspend fun deviceToken(): String = token
    override suspend fun invalidate(token: String): Unit = Unit
}

/** Keeps a device token across process restarts (Android: SharedPreferences). */
public interface DeviceTokenStore {
    public fun load(): DeviceToken?
    public fun save(token: DeviceToken?)
}

/**
 * Caches the device token and attests again shortly before it expires: when less than [refreshMarginMs], or a fifth of
 * the token's lifetime if that is shorter, remains. Concurrent callers share one attestation.
 */
public class DeviceTokenCache(
    private val clock: () -> Long = System::currentTimeMillis,
    private val refreshMarginMs: Long = 5 * 60_000L,
    private val store: DeviceTokenStore? = null,
    private val attest: suspend () -> DeviceToken,
) : DeviceTokenSource {
    private val mutex = Mutex()

    @Volatile
    private var current: DeviceToken? = null
    private var loaded = false

    override suspend fun deviceToken(): String = mutex.withLock {
        if (!loaded) {
            loaded = true
            current = current ?: runCatching { store?.load() }.getOrNull()
        }
        val now = clock()
        val cached = current
        if (cached != null && !needsRefresh(cached, now)) return@withLock cached.token
        val fresh = attest()
        current = fresh
        runCatching { store?.save(fresh) }
        fresh.token
    }

    override suspend fun invalidate(token: String) {
        mutex.withLock {
            if (current?.token == token) {
                current = null
                runCatching { store?.save(null) }
            }
        }
    }

    /** True when [token] should be replaced at [nowMs]. */
    public fun needsRefresh(token: DeviceToken, nowMs: Long): Boolean {
        val lifetime = (token.expiresAtMs - token.receivedAtMs).coerceAtLeast(0)
        val margin = minOf(refreshMarginMs, lifetime / 5)
        return nowMs >= token.expiresAtMs - margin
    }
}
