package dev.tollgate.core

import java.util.Base64

/** Fixtures shared by the loopback tests. */
internal object TestSupport {
    const val APP_TOKEN = "at_0123456789abcdefghijABCDEFGHIJkl"

    /** An unsigned compact JWS with [claims] (the SDK reads `exp` without verifying). */
    fun jws(claims: String): String {
        val encoder = Base64.getUrlEncoder().withoutPadding()
        return encoder.encodeToString("""{"alg":"EdDSA"}""".toByteArray()) + "." + encoder.encodeToString(claims.toByteArray()) + ".c2ln"
    }

    /** An attestor that earns tokens without a gateway and counts how often it did, split by new keys and refreshes. */
    class CountingAttestor(private val tokens: () -> DeviceToken) : Attestor {
        var refreshes = 0
        var newKeys = 0
        var warmUps = 0
        var hasKey = false

        override suspend fun refresh(api: AttestationApi): DeviceToken? {
            if (!hasKey) return null
            refreshes += 1
            return tokens()
        }

        override suspend fun attestNewKey(api: AttestationApi): DeviceToken {
            newKeys += 1
            hasKey = true
            return tokens()
        }

        override suspend fun sign(digest: ByteArray): ByteArray? = null

        override suspend fun warmUp() {
            warmUps += 1
        }
    }
}
