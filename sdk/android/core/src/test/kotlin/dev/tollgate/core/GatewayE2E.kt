package dev.tollgate.core

import okhttp3.RequestBody.Companion.toRequestBody

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
    class DevelopmentAttestor(private val deviceId: String, private val token: String = developmentToken) : Attestor {
        var exchanges = 0

        override suspend fun refresh(api: AttestationApi): DeviceToken? = null

        override suspend fun attestNewKey(api: AttestationApi): DeviceToken {
            exchanges += 1
            return api.exchange("development", AttestationBodies.development(token, deviceId))
        }

        override suspend fun sign(digest: ByteArray): ByteArray? = null
    }

    /** A client of the app with [app] (its app token and development token), attesting as [deviceId]. */
    fun client(
        deviceId: String,
        attestor: DevelopmentAttestor? = null,
        app: Pair<String, String> = appToken to developmentToken,
    ): Pair<TollgateClient, DeviceSession> {
        val transport = OkHttpTransport()
        val clock = ServerClock()
        val session = DeviceSession(
            AttestationApi(gateway, app.first, TollgateClient.DEFAULT_SDK, transport, serverClock = clock),
            attestor ?: DevelopmentAttestor(deviceId, app.second),
        )
        return TollgateClient(gateway, app.first, session, transport, serverClock = clock) to session
    }

    /** The app whose realtime sessions last at most one second (`maxSessionSeconds: 1`). */
    val shortSessionApp: Pair<String, String> get() = env("TOLLGATE_E2E_SHORT_APP_TOKEN") to env("TOLLGATE_E2E_SHORT_DEVELOPMENT_TOKEN")

    /** The app that requires a signed-in user (`userTokenMode: required`, the fake sign-in provider's key set). */
    val userApp: Pair<String, String> get() = env("TOLLGATE_E2E_USER_APP_TOKEN") to env("TOLLGATE_E2E_USER_DEVELOPMENT_TOKEN")

    /** Asks the harness to revoke [deviceId] of the main app through the gateway's management API. */
    fun revoke(deviceId: String) {
        val request = okhttp3.Request.Builder().url("${env("TOLLGATE_E2E_REVOKE_URL")}/$deviceId")
            .post(ByteArray(0).toRequestBody(null)).build()
        okhttp3.OkHttpClient().newCall(request).execute().use { check(it.code == 204) { "revocation answered ${it.code}" } }
    }
}
