package dev.tollgate.core

import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock

/**
 * The signed-in user's ID token for `Tollgate-User-Token` (protocol.md, "End users"), from the app's callback: Firebase
 * `getIdToken(forceRefresh)`, Supabase `session.accessToken`, Auth0, Clerk, Cognito, Sign in with Apple.
 *
 * - The callback is called when no fresh token is cached: none yet, or the cached one's `exp` (read without verifying; the
 *   gateway verifies) is less than a minute away on the gateway's clock. A token without a readable `exp` is not cached.
 * - After the gateway's `user_token_expired` the client calls it again exactly once, with `forceRefresh = true`, and
 *   sends the request once more; a second refusal is surfaced as [TollgateError.Unauthorized].
 * - [setProvider] with null (sign-out) forgets the callback and the cached token: no user token is sent any more.
 */
public class UserTokens(private val clock: ServerClock = ServerClock()) {
    private val mutex = Mutex()

    @Volatile
    private var provider: (suspend (forceRefresh: Boolean) -> String?)? = null
    private var generation = 0L
    private var cached: String? = null
    private var cachedExpiresAtMs = 0L

    /** True while a callback is set (a user is signed in). */
    public val isSet: Boolean get() = provider != null

    /** Sets (or, with null, clears) the callback; the cached token is dropped either way. */
    public fun setProvider(callback: (suspend (forceRefresh: Boolean) -> String?)?) {
        synchronized(this) {
            provider = callback
            generation += 1
            cached = null
            cachedExpiresAtMs = 0
        }
    }

    /**
     * Caches [token], one the app already holds (restored at start, say), as if the callback had just returned it: it is
     * sent while fresh, and only a token with a readable `exp` is kept.
     */
    public fun prime(token: String) {
        synchronized(this) {
            val expiresAt = TokenExpiry.jwsExpMs(token)
            cached = token.takeIf { expiresAt != null }
            cachedExpiresAtMs = expiresAt ?: 0
        }
    }

    /** The token to send: the cached one while fresh, else the callback's (null when no callback or it returns none). */
    public suspend fun current(): String? = obtain(forceRefresh = false)

    /** A new token from the callback with `forceRefresh = true` (after `user_token_expired`). */
    public suspend fun refreshed(): String? = obtain(forceRefresh = true)

    private suspend fun obtain(forceRefresh: Boolean): String? = mutex.withLock {
        val (callback, seen) = synchronized(this) { provider to generation }
        callback ?: return@withLock null
        if (!forceRefresh) {
            val token = synchronized(this) { cached?.takeIf { clock.now() < cachedExpiresAtMs - MARGIN_MS } }
            if (token != null) return@withLock token
        }
        val token = try {
            callback(forceRefresh)?.takeIf { it.isNotBlank() }
        } catch (error: kotlinx.coroutines.CancellationException) {
            throw error
        } catch (error: Exception) {
            throw TollgateError.Unauthorized("The app's user token callback failed: ${error.message}", reason = "user_token_unavailable")
        }
        if (token != null && token.any { it == '\r' || it == '\n' || it == '\u0000' }) {
            throw TollgateError.InvalidRequest("The user token contains CR, LF or NUL.", reason = "user_token_invalid")
        }
        synchronized(this) {
            // A sign-out during the callback wins: nothing is cached for a provider that is gone.
            if (generation == seen) {
                val expiresAt = token?.let(TokenExpiry::jwsExpMs)
                cached = token.takeIf { expiresAt != null }
                cachedExpiresAtMs = expiresAt ?: 0
            }
        }
        token
    }

    public companion object {
        /** The gateway's reason that makes the client ask the callback once more. */
        public const val EXPIRED: String = "user_token_expired"
        /** A cached token is reused while its `exp` is more than this away (gateway clock). */
        public const val MARGIN_MS: Long = 60_000L
    }
}
