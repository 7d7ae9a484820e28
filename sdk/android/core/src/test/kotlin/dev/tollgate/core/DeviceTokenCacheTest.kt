package dev.tollgate.core

import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

class DeviceTokenCacheTest {
    private var now = 0L
    private var attestations = 0
    private val store = object : DeviceTokenStore {
        var saved: DeviceToken? = null
        override fun load(): DeviceToken? = saved
        override fun save(token: DeviceToken?) {
            saved = token
        }
    }

    private fun cache() = DeviceTokenCache(clock = { now }, store = store) {
        attestations += 1
        DeviceToken("t$attestations", now + 3_600_000, now)
    }

    @Test
    fun `reuses the token until five minutes before expiry, then attests again`() = runBlocking {
        val cache = cache()
        assertEquals("t1", cache.deviceToken())
        now = 3_600_000 - 300_001
        assertEquals("t1", cache.deviceToken())
        now = 3_600_000 - 300_000
        assertEquals("t2", cache.deviceToken())
        assertEquals(2, attestations)
    }

    @Test
    fun `a short-lived token refreshes a fifth of its lifetime early`() = runBlocking {
        val cache = DeviceTokenCache(clock = { now }) { attestations += 1; DeviceToken("s$attestations", now + 60_000, now) }
        assertEquals("s1", cache.deviceToken())
        now = 47_999
        assertEquals("s1", cache.deviceToken())
        now = 48_000
        assertEquals("s2", cache.deviceToken())
    }

    @Test
    fun `a stored token survives a restart and invalidate forgets it`() = runBlocking {
        assertEquals("t1", cache().deviceToken())
        val restarted = cache()
        assertEquals("t1", restarted.deviceToken())
        restarted.invalidate("t1")
        assertEquals(null, store.saved)
        assertEquals("t2", restarted.deviceToken())
    }

    @Test
    fun `concurrent callers share one attestation`() = runBlocking {
        val cache = DeviceTokenCache(clock = { now }) { delay(50); attestations += 1; DeviceToken("c", 3_600_000, 0) }
        val tokens = (1..10).map { async { cache.deviceToken() } }.awaitAll()
        assertEquals(List(10) { "c" }, tokens)
        assertEquals(1, attestations)
    }
}
