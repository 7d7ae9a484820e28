package dev.tollgate.core

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.concurrent.ConcurrentLinkedQueue

/**
 * Signed-in users and `GET /v1/me` through a real gateway (protocol.md, "End users"): the harness runs a fake sign-in
 * provider on loopback whose JSON Web Key Set (RFC 7517) the gateway reads, and hands this test one ID token that has
 * expired and one that is fresh, signed by that provider (RS256, RFC 7519), as Firebase issues them
 * (https://firebase.google.com/docs/auth/admin/verify-id-tokens).
 */
class UserGatewayE2ETest {
    private val expired get() = GatewayE2E.env("TOLLGATE_E2E_USER_TOKEN_EXPIRED")
    private val fresh get() = GatewayE2E.env("TOLLGATE_E2E_USER_TOKEN_FRESH")

    @Test
    fun `the user-token callback is called again exactly once on user_token_expired`() = runBlocking {
        val (client, device) = GatewayE2E.client("kotlin-e2e-user", app = GatewayE2E.userApp)
        val calls = ConcurrentLinkedQueue<Boolean>()
        client.setUserTokenProvider { force ->
            calls.add(force)
            if (force) fresh else expired
        }
        assertEquals(200, client.request("GET", "openai/v1/models").status)
        assertEquals(listOf(false, true), calls.toList(), "asked once, then once more forced")
        val me = client.me()
        assertTrue(me.signedIn)
        assertTrue(me.userId!!.contains("user-1"), "userId ${me.userId}")
        assertEquals(2, calls.size, "the fresh token is reused while valid")

        // A callback that only has an expired token: one more call, then the gateway's refusal surfaces.
        val (stale) = GatewayE2E.client("kotlin-e2e-user-stale", app = GatewayE2E.userApp)
        val staleCalls = ConcurrentLinkedQueue<Boolean>()
        stale.setUserTokenProvider { force ->
            staleCalls.add(force)
            expired
        }
        val error = assertThrows<TollgateError.Unauthorized> { runBlocking { stale.request("GET", "openai/v1/models") } }
        assertEquals("user_token_expired", error.reason)
        assertEquals(listOf(false, true), staleCalls.toList())
        assertTrue(!device.isRevoked)
    }

    @Test
    fun `me() returns the gateway's figures, and charges nothing`() = runBlocking {
        val (client) = GatewayE2E.client("kotlin-e2e-me")
        client.request("GET", "openai/v1/models")
        val me = client.me()
        assertEquals("kotlin-e2e-me", me.deviceId)
        assertTrue(!me.signedIn)
        val requests = me.limit("device-requests-day") ?: error("no device-requests-day in ${me.limits}")
        assertEquals("device", requests.scope)
        assertEquals("requests", requests.unit)
        assertEquals("day", requests.window)
        assertEquals(50.0, requests.limit)
        assertEquals(49.0, requests.remaining)
        val resetsAt = requests.resetsAtMs ?: error("no resetsAt")
        assertTrue(resetsAt > System.currentTimeMillis() && resetsAt <= System.currentTimeMillis() + 86_400_000 + 5_000, "resetsAt $resetsAt")
        assertEquals(49.0, client.me().limit("device-requests-day")!!.remaining)
    }
}
