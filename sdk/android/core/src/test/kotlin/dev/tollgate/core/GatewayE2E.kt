package dev.tollgate.core

/**
 * What test/sdk/kotlin-gateway.test.ts hands the end-to-end tests: a real gateway started from dist/ with a fake OpenAI
 * on loopback, an app with development attestation and its development token.
 */
internal object GatewayE2E {
    fun env(name: String): String = System.getenv(name) ?: error("$name is not set: run this test through test/sdk/kotlin-gateway.test.ts")

    val gateway: String get() = env("TOLLGATE_E2E_GATEWAY")
    val appToken: String get() = env("TOLLGATE_E2E_APP_TOKEN")
    val developmentToken: String get() = env("TOLLGATE_E2E_DEVELOPMENT_TOKEN")

    /** Development attestation over HTTP, as a debug build on an emulator does; counts the exchanges. */
    class DevelopmentAttestor(private val deviceId: String) : Attestor {
        var exchanges = 0

        override suspend fun refresh(api: AttestationApi): DeviceToken? = null

        override suspend fun attestNewKey(api: AttestationApi): DeviceToken {
            exchanges += 1
            return api.exchange("development", AttestationBodies.development(developmentToken, deviceId))
        }

        override suspend fun sign(digest: ByteArray): ByteArray? = null
    }

    fun client(deviceId: String, attestor: DevelopmentAttestor = DevelopmentAttestor(deviceId)): Pair<TollgateClient, DeviceSession> {
        val transport = OkHttpTransport()
        val clock = ServerClock()
        val session = DeviceSession(AttestationApi(gateway, appToken, TollgateClient.DEFAULT_SDK, transport, serverClock = clock), attestor)
        return TollgateClient(gateway, appToken, session, transport, serverClock = clock) to session
    }
}
