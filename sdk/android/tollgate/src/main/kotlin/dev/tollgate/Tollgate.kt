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
            val transport = OkHttpTransport(configuration.httpClient ?: OkHttpClient())
            val storage = SecureStorage(application, appToken)
            val api = AttestationApi(gatewayUrl, appToken, SDK, transport)
            val attestor = AndroidAttestor(application, configuration, storage)
            val session = DeviceSession(api, attestor, storage, sendAssertions = configuration.sendAssertions, revoked = revoked)
            val client = TollgateClient(gatewayUrl, appToken, session, transport, SDK, retry = configuration.retry)
            state.ready(State(key, client, session, attestor))
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
     * Attests now if needed (e.g. at start-up, to hide the first request's latency) and warms the Play Integrity
     * standard provider up; later requests reuse the token.
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
