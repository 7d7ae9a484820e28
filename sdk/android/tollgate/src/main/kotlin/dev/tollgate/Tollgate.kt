package dev.tollgate

import android.content.Context
import android.content.pm.PackageManager
import dev.tollgate.core.AttestationApi
import dev.tollgate.core.DeviceSession
import dev.tollgate.core.Initialization
import dev.tollgate.core.RequestBody
import dev.tollgate.core.StreamEvent
import dev.tollgate.core.StreamFormat
import dev.tollgate.core.TollgateClient
import dev.tollgate.core.TollgateError
import dev.tollgate.core.TollgateRequest
import dev.tollgate.core.TollgateResponse
import dev.tollgate.core.Me
import dev.tollgate.core.RealtimeSession
import dev.tollgate.core.ServerClock
import dev.tollgate.core.TollgateInterceptor
import dev.tollgate.core.okHttpClient
import dev.tollgate.core.providerBaseUrl
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.flow.Flow
import okhttp3.OkHttpClient

/**
 * The Tollgate SDK for Android. Call [initialize] once, in `Application.onCreate`; then [request] and [stream] from
 * anywhere. Every failure is a [TollgateError] (before [initialize]: [TollgateError.InvalidRequest] with reason
 * `not_initialized`).
 *
 * ```
 * // AndroidManifest.xml, inside <application>:
 * //   <meta-data android:name="dev.tollgate.GATEWAY_URL" android:value="https://gateway.example.com" />
 * class App : Application() {
 *     override fun onCreate() {
 *         super.onCreate()
 *         Tollgate.initialize(this, "at_…")
 *     }
 * }
 * ```
 */
public object Tollgate {
    /** `Tollgate-SDK` sent by this module. */
    public const val SDK: String = "android/" + TollgateClient.VERSION

    /** Manifest `<application>` meta-data naming the gateway when [TollgateConfiguration.gatewayUrl] is null. */
    public const val GATEWAY_URL_META_DATA: String = "dev.tollgate.GATEWAY_URL"

    /** Manifest `<application>` meta-data with the Google Cloud project number for Play Integrity standard requests. */
    public const val CLOUD_PROJECT_NUMBER_META_DATA: String = "dev.tollgate.CLOUD_PROJECT_NUMBER"

    /** What [initialize] built: the client and the device session (shared with the Flutter and React Native plugins). */
    private class State(
        val key: String,
        val client: TollgateClient,
        val session: DeviceSession,
        val attestor: AndroidAttestor,
    )

    private val state = Initialization<State>()
    private val lock = Any()
    private val background = CoroutineScope(SupervisorJob() + Dispatchers.IO)

    @Volatile
    private var userTokenProvider: (suspend (forceRefresh: Boolean) -> String?)? = null

    /** True once [initialize] has run with a gateway address. */
    public val isInitialized: Boolean get() = state.isReady

    /**
     * Sets the SDK up with the gateway address from the manifest meta-data `dev.tollgate.GATEWAY_URL`; call from
     * `Application.onCreate`. Nothing goes on the network here: the first request attests (or [prepare] does).
     *
     * @param appToken the app token (`at_…`) from the dashboard or `npx tollgate apps create`. It identifies the app;
     *   it is not a provider key.
     * @throws TollgateError.InvalidRequest with reason `gateway_url_missing` when the manifest names no gateway (every
     *   later call then fails the same way, before sending anything).
     */
    @JvmStatic
    public fun initialize(context: Context, appToken: String) {
        initialize(context, appToken, TollgateConfiguration())
    }

    /**
     * Sets the SDK up with explicit settings ([TollgateConfiguration.gatewayUrl] overrides the manifest). Calling it
     * again with the same app token and gateway keeps the current device session (and so a revocation, which lasts until
     * the process restarts); other values replace it.
     */
    @JvmStatic
    public fun initialize(context: Context, appToken: String, configuration: TollgateConfiguration) {
        val application = context.applicationContext ?: context
        val gatewayUrl = configuration.gatewayUrl?.takeIf { it.isNotBlank() } ?: gatewayUrlFromManifest(application)
        if (gatewayUrl == null) {
            state.gatewayUrlMissing()
            throw Initialization.gatewayUrlMissingError()
        }
        synchronized(lock) {
            val key = "$gatewayUrl\n$appToken\n${configuration.developmentToken != null}"
            val previous = runCatching { state.get() }.getOrNull()
            if (previous?.key == key) return
            // A revocation lasts until the process restarts, whatever the new settings for the same app and gateway.
            val revoked = previous != null && previous.key.substringBeforeLast('\n') == key.substringBeforeLast('\n') && previous.session.isRevoked
            val http = configuration.httpClient ?: OkHttpClient()
            val transport = OkHttpTransport(http)
            val storage = SecureStorage(application, appToken)
            // One clock for attestation and requests: the offset learnt from any answer's Date serves both.
            val serverClock = ServerClock()
            val api = AttestationApi(gatewayUrl, appToken, SDK, transport, serverClock = serverClock)
            val attestor = AndroidAttestor(application, configuration, storage)
            val session = DeviceSession(api, attestor, storage, sendAssertions = configuration.sendAssertions, revoked = revoked)
            val client = TollgateClient(
                gatewayUrl, appToken, session, transport, SDK, retry = configuration.retry, serverClock = serverClock, webSockets = http,
            )
            // A user-token callback set before initialize (or before a re-initialize) applies to the new client.
            client.userTokens.setProvider(userTokenProvider)
            state.ready(State(key, client, session, attestor))
            // The Play Integrity standard provider takes seconds to prepare: start now, not at the first request.
            session.warmUpIn(background)
        }
    }

    /** The client behind this object, for code that prefers an instance (dependency injection, tests). */
    public val client: TollgateClient get() = state.get().client

    /**
     * The device-token lifecycle of this process (refresh, revocation, assertions). The Flutter and React Native
     * plugins reach it through [TollgateBridge].
     */
    public val session: DeviceSession get() = state.get().session

    /**
     * Sends a request through the gateway and returns the whole 2xx response.
     *
     * @param endpoint `{provider}/{version}/{path}`, e.g. `openai/v1/chat/completions`.
     */
    public suspend fun request(
        method: String,
        endpoint: String,
        body: RequestBody? = null,
        query: List<Pair<String, String>> = emptyList(),
        headers: Map<String, String> = emptyMap(),
    ): TollgateResponse = client.request(TollgateRequest(method, endpoint, body, query, headers))

    /** Sends [request] and returns the whole 2xx response. */
    public suspend fun request(request: TollgateRequest): TollgateResponse = client.request(request)

    /**
     * Streams a response as events. Without a [format], the response's `Content-Type` decides (`text/event-stream`
     * → SSE events, `application/x-ndjson` → JSON lines, `application/json` → elements of a streamed JSON array,
     * anything else → raw byte chunks). Nothing is sent until the flow is collected.
     */
    public fun stream(
        method: String,
        endpoint: String,
        body: RequestBody? = null,
        format: StreamFormat? = null,
        query: List<Pair<String, String>> = emptyList(),
        headers: Map<String, String> = emptyMap(),
    ): Flow<StreamEvent> = client.stream(TollgateRequest(method, endpoint, body, query, headers), format)

    /** Streams [request] as events of [format] (null: from the response's `Content-Type`). */
    public fun stream(request: TollgateRequest, format: StreamFormat? = null): Flow<StreamEvent> = client.stream(request, format)

    /**
     * Opens a realtime session (WebSocket) through the gateway, e.g. `Tollgate.realtime("openai/v1/realtime?model=gpt-realtime")`.
     * The device token is refreshed before the upgrade; [RealtimeSession.messages] is a `Flow` of the provider's frames,
     * ending with the close's typed error (4429 → [TollgateError.RateLimited] with its reason, …); after 4503 `draining`
     * ([RealtimeSession.closed] `.mayReconnect`) open a new session at once. A refused upgrade throws its typed error.
     */
    public suspend fun realtime(endpoint: String, protocols: List<String> = emptyList(), headers: Map<String, String> = emptyMap()): RealtimeSession =
        client.realtime(endpoint, protocols, headers)

    /**
     * The signed-in user's ID token, for apps whose gateway identifies users (`Tollgate-User-Token`): e.g. with Firebase
     * `Tollgate.setUserTokenProvider { force -> Firebase.auth.currentUser?.getIdToken(force)?.await()?.token }`. Called
     * when no fresh token is cached, and once more with `true` after the gateway's `user_token_expired`. Pass null at
     * sign-out: no user token is sent any more. May be called before [initialize].
     */
    public fun setUserTokenProvider(provider: (suspend (forceRefresh: Boolean) -> String?)?) {
        userTokenProvider = provider
        if (state.isReady) client.setUserTokenProvider(provider)
    }

    /** `GET /v1/me`: every limit and budget of this device (and user) with what remains, e.g. "12 messages left today". */
    public suspend fun me(): Me = client.me()

    /**
     * An OkHttp client for provider SDKs that take one (openai-java `OpenAIOkHttpClient.builder().okHttpClient(…)`,
     * Retrofit, Ktor's OkHttp engine): adds the Tollgate headers to every request to [providerBaseUrl], refreshes the
     * device token, maps gateway refusals ([TollgateException]) and streams unbuffered.
     */
    public fun okHttpClient(base: OkHttpClient = OkHttpClient()): OkHttpClient = client.okHttpClient(base)

    /** The interceptor of [okHttpClient], for SDKs that take interceptors (`OpenAIOkHttpClient.builder().addInterceptor(…)`). */
    public fun interceptor(): TollgateInterceptor = TollgateInterceptor(client)

    /** The base URL to give a provider SDK for `{provider}/{version}`, e.g. `providerBaseUrl("openai/v1")`. */
    public fun providerBaseUrl(prefix: String): String = client.providerBaseUrl(prefix)

    /**
     * Attests now if needed (e.g. at start-up, to hide the first request's latency); later requests reuse the token.
     * The Play Integrity provider is warmed up by [initialize] already.
     */
    public suspend fun prepare() {
        val current = state.get()
        current.attestor.warmUp()
        current.session.deviceToken()
    }

    /** The gateway address in the app's manifest (`<application>` meta-data `dev.tollgate.GATEWAY_URL`), or null. */
    @JvmStatic
    public fun gatewayUrlFromManifest(context: Context): String? = manifestMetaData(context, GATEWAY_URL_META_DATA)?.takeIf { it.isNotBlank() }

    /** An `<application>` meta-data value as text (numbers included), or null. */
    internal fun manifestMetaData(context: Context, name: String): String? = try {
        @Suppress("DEPRECATION")
        context.packageManager.getApplicationInfo(context.packageName, PackageManager.GET_META_DATA).metaData?.get(name)?.toString()
    } catch (_: PackageManager.NameNotFoundException) {
        null
    }
}
