package dev.tollgate.core

import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * Realtime sessions through a real gateway (protocol.md, "Realtime sessions") against a fake OpenAI Realtime socket
 * (https://platform.openai.com/docs/guides/realtime-websocket) that echoes every frame, and closes with the code and
 * reason the app's first text asks for ("close 4429 token_budget"): the gateway passes a provider's close on with its
 * code, so the client maps exactly what crossed the gateway. The gateway's own closes too: 4429 `session_too_long` for
 * an app whose sessions last at most a second, 4403 `device_revoked` when the harness revokes the device mid-session.
 */
class RealtimeGatewayE2ETest {
    private val endpoint = "openai/v1/realtime?model=gpt-realtime"

    @Test
    fun `frames go both ways through the gateway`() = runBlocking {
        val (client) = GatewayE2E.client("kotlin-e2e-realtime-frames")
        val session = client.realtime(endpoint)
        assertTrue(session.send("""{"type":"session.update"}"""))
        assertTrue(session.send(byteArrayOf(0, 1, 2, 3)))
        val echoed = withTimeout(10_000) { session.messages.take(2).toList() }
        assertEquals("""{"type":"session.update"}""", (echoed[0] as RealtimeMessage.Text).text)
        assertArrayEquals(byteArrayOf(0, 1, 2, 3), (echoed[1] as RealtimeMessage.Binary).bytes)
        session.close()
    }

    @Test
    fun `a refused upgrade is attestationFailed with the gateway's reason`() = runBlocking {
        val client = TollgateClient(GatewayE2E.gateway, GatewayE2E.appToken, StaticDeviceToken("not-a-device-token"), OkHttpTransport())
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { client.realtime(endpoint) } }
        assertTrue(error.reason != null && error.reason!!.startsWith("device_token"), "reason ${error.reason}")
    }

    @Test
    fun `a 4429 close is rateLimited with its reason`() = runBlocking {
        val (client) = GatewayE2E.client("kotlin-e2e-realtime-4429")
        val session = client.realtime(endpoint)
        session.send("close 4429 token_budget")
        val error = assertThrows<TollgateError.RateLimited> { runBlocking { withTimeout(10_000) { session.messages.toList() } } }
        assertEquals("token_budget", error.reason)
        assertEquals(4429, session.closed!!.code)
    }

    @Test
    fun `the gateway closing a session 4429 at its longest duration is rateLimited with the reason`() = runBlocking {
        val attestor = GatewayE2E.DevelopmentAttestor("kotlin-e2e-realtime-too-long", GatewayE2E.shortSessionApp.second)
        val (client, device) = GatewayE2E.client("kotlin-e2e-realtime-too-long", attestor, GatewayE2E.shortSessionApp)
        val session = client.realtime(endpoint)
        // The gateway's sweep (once a second) closes a session older than the app's maxSessionSeconds (1).
        val error = assertThrows<TollgateError.RateLimited> { runBlocking { withTimeout(15_000) { session.messages.toList() } } }
        assertEquals("session_too_long", error.reason)
        assertEquals(4429, error.closeCode)
        assertEquals(4429, session.closed!!.code)
        assertTrue(!error.mayReconnect)
        assertEquals(1, attestor.exchanges)
        assertTrue(!device.isRevoked)
    }

    @Test
    fun `the gateway closing 4403 device_revoked stops the device without a new key`() = runBlocking {
        val deviceId = "kotlin-e2e-realtime-revoked"
        val attestor = GatewayE2E.DevelopmentAttestor(deviceId)
        val (client, device) = GatewayE2E.client(deviceId, attestor)
        val session = client.realtime(endpoint)
        assertTrue(session.send("""{"type":"session.update"}"""))
        withTimeout(10_000) { session.messages.take(1).toList() }
        GatewayE2E.revoke(deviceId)
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { withTimeout(15_000) { session.messages.toList() } } }
        assertEquals("device_revoked", error.reason)
        assertEquals(4403, error.closeCode)
        assertTrue(device.isRevoked, "the device session stopped")
        // Nothing more is attested: the next session is refused by the SDK itself, with the same reason.
        val again = assertThrows<TollgateError.AttestationFailed> { runBlocking { client.realtime(endpoint) } }
        assertEquals("device_revoked", again.reason)
        assertEquals(1, attestor.exchanges)
    }

    @Test
    fun `a 4403 close does not re-key`() = runBlocking {
        val attestor = GatewayE2E.DevelopmentAttestor("kotlin-e2e-realtime-4403")
        val (client, device) = GatewayE2E.client("kotlin-e2e-realtime-4403", attestor)
        val session = client.realtime(endpoint)
        session.send("close 4403 user_blocked")
        val error = assertThrows<TollgateError.AttestationFailed> { runBlocking { withTimeout(10_000) { session.messages.toList() } } }
        assertEquals("user_blocked", error.reason)
        assertEquals(1, attestor.exchanges)
        // The next session reuses the same device token: no attestation, no new key.
        val next = client.realtime(endpoint)
        next.close()
        assertEquals(1, attestor.exchanges)
        assertTrue(!device.isRevoked)
    }
}
