package dev.tollgate

import android.content.Context
import android.content.pm.PackageManager
import dev.tollgate.core.AttestationApi
import dev.tollgate.core.DeviceTokenCache
import dev.tollgate.core.RequestBody
import dev.tollgate.core.StreamEvent
import dev.tollgate.core.StreamFormat
import dev.tollgate.core.TollgateClient
import dev.tollgate.core.TollgateRequest
import dev.tollgate.core.TollgateResponse
import kotlinx.coroutines.flow.Flow
import okhttp3.OkHttpClient

/** Thrown when the SDK is used before [Tollgate.initialize]. */
public class TollgateNotInitializedException :
    IllegalStateException("Tollgate is not initialized: call Tollgate.initialize(context, appToken) in Application.onCreate before any request.")

/**
 * The Tollgate SDK for Android. Call [initialize] once, in `Application.onCreate`; then [request] and [stream] from
 * anywhere. Every failure is a [dev.tollgate.core.TollgateError].
 *
 * ```
 * class App : Application() {
 *     override fun onCreate() {
 *         super.onCreate()
 *         Tollgate.initialize(this, "at_…", TollgateConfiguration(developmentToken = if (BuildConfig.DEBUG) "dt_…" else null))
 *     }
 * }
 * ```
 */
public object Tollgate {
    /** `Tollgate-SDK` sent by this module. */
    public const val SDK: String = "android/" + TollgateClient.VERSION

    /** Manifest meta-data naming the gateway when [TollgateConfiguration.gatewayUrl] is null. */
    public const val GATEWAY_URL_META_DATA: String = "dev.tollgate.GATEWAY_URL"

    @Volatile
    private var state: State? = null

    private class State(val client: TollgateClient, val tokens: DeviceTokenCache)

    /** True once [initialize] has run. */
    public val isInitialized: Boolean get() = state != null

    /**
     * Sets the SDK up; call from `Application.onCreate`. Nothing goes on the network here: the first request attests.
     * Calling it again replaces the configuration (e.g. in tests).
     *
     * @param appToken the app token (`at_…`) from the dashboard or `npx tollgate apps create`. It identifies the app;
     *   it is not a provider key.
     */
    @JvmStatic
    @JvmOverloads
    public fun initialize(context: Context, appToken: String, configuration: TollgateConfiguration = TollgateConfiguration()) {
        val application = context.applicationContext
        val gatewayUrl = configuration.gatewayUrl ?: readGatewayUrl(application)
            ?: throw IllegalArgumentException("No gateway URL: pass TollgateConfiguration(gatewayUrl = …) or set <meta-data android:name=\"$GATEWAY_URL_META_DATA\">.")
        val transport = OkHttpTransport(configuration.httpClient ?: OkHttpClient())
        val store = PreferencesDeviceTokenStore(application, appToken)
        val api = AttestationApi(gatewayUrl, appToken, SDK, transport)
        val attestor = AndroidAttestor(application, api, configuration, store)
        val tokens = DeviceTokenCache(store = store) { attestor.attest() }
        state = State(TollgateClient(gatewayUrl, appToken, tokens, transport, SDK), tokens)
    }

    /** The client behind this object, for code that prefers an instance (dependency injection, tests). */
    public val client: TollgateClient get() = (state ?: throw TollgateNotInitializedException()).client

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
     * Streams a response as events of [format] (`SSE` for OpenAI/Anthropic-style streams, `NDJSON`, `JSON_ARRAY` for
     * Gemini without `alt=sse`, `RAW` for audio bytes). Nothing is sent until the flow is collected.
     */
    public fun stream(
        method: String,
        endpoint: String,
        body: RequestBody? = null,
        format: StreamFormat = StreamFormat.SSE,
        query: List<Pair<String, String>> = emptyList(),
        headers: Map<String, String> = emptyMap(),
    ): Flow<StreamEvent> = client.stream(TollgateRequest(method, endpoint, body, query, headers), format)

    /** Streams [request] as events of [format]. */
    public fun stream(request: TollgateRequest, format: StreamFormat): Flow<StreamEvent> = client.stream(request, format)

    /** Attests now (e.g. at start-up, to hide the first request's latency); later requests reuse the token. */
    public suspend fun prepare() {
        (state ?: throw TollgateNotInitializedException()).tokens.deviceToken()
    }

    private fun readGatewayUrl(context: Context): String? = try {
        @Suppress("DEPRECATION")
        context.packageManager.getApplicationInfo(context.packageName, PackageManager.GET_META_DATA).metaData?.getString(GATEWAY_URL_META_DATA)
    } catch (_: PackageManager.NameNotFoundException) {
        null
    }
}
