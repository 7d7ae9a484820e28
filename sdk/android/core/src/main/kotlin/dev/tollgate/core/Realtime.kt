package dev.tollgate.core

import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.channels.trySendBlocking
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.receiveAsFlow
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import okio.ByteString
import okio.ByteString.Companion.toByteString

/** One frame of a realtime session, as the provider (or the app) sent it. */
public sealed class RealtimeMessage {
    public class Text(public val text: String) : RealtimeMessage() {
        override fun toString(): String = "Text(${text.take(80)})"
    }

    public class Binary(public val bytes: ByteArray) : RealtimeMessage() {
        override fun toString(): String = "Binary(${bytes.size} bytes)"
    }
}

/** What the app should do after a session closed (sdk/conformance realtime close codes). */
public enum class RealtimeAction(public val wireName: String) {
    /** Nothing to do: a normal close, or an error to show. */
    NONE("none"),

    /** 4503 `draining`: the gateway node is shutting down; open a new session at once (another node answers). */
    RECONNECT("reconnect"),

    /** 4403 `device_revoked`: the device session stops until the app restarts; no new key is attested. */
    STOP("stop"),
}

/**
 * A close frame of a realtime session (protocol.md, "Realtime sessions": gateway closes use 44xx/45xx with the error
 * `reason` as the close reason) and what it means for the app (sdk/conformance/README.md, "realtime-close-codes.json").
 */
public class RealtimeClose(public val code: Int, public val reason: String) {
    /** The close reason, trimmed (may be empty). */
    public val message: String get() = reason.trim()

    /** The gateway's error type for its own close codes (4400 `invalidRequest` … 4504 `upstreamTimeout`), else null. */
    public val errorType: String? get() = GATEWAY_TYPES[code]

    /**
     * The close reason when it is snake_case (the gateway's error `reason`, e.g. `token_budget`), else null; null for a
     * provider's own close, whose reason text is the provider's.
     */
    public val errorReason: String? get() = message.takeIf { kind != "providerError" && REASON.matches(it) }

    /**
     * The SDK error kind, or null for a normal end (1000): the gateway's codes by their type, any other 44xx
     * `invalidRequest`, any other 45xx and the transport closes (1001, 1006, 1011–1014) `networkError`, every other code
     * (the provider's own close, passed through) `providerError`.
     */
    public val kind: String?
        get() = when {
            code == NORMAL -> null
            code == 4400 -> "invalidRequest"
            code == 4401 -> "unauthorized"
            code == 4403 -> "attestationFailed"
            code == 4429 -> "rateLimited"
            code in 4400..4499 -> "invalidRequest"
            code in 4500..4599 -> "networkError"
            code in NETWORK_CLOSES -> "networkError"
            else -> "providerError"
        }

    /** The app's next step. A 4403 never re-keys: `device_revoked` stops, anything else changes nothing. */
    public val action: RealtimeAction
        get() = when {
            code == 4503 -> RealtimeAction.RECONNECT
            code == 4403 && errorReason == DeviceSession.REVOKED -> RealtimeAction.STOP
            else -> RealtimeAction.NONE
        }

    /** True for 4503: the app may reconnect at once. */
    public val mayReconnect: Boolean get() = action == RealtimeAction.RECONNECT

    /** Always false: no close makes the SDK attest a new key or refresh the device token. */
    public val newKey: Boolean get() = false

    /**
     * The typed error the message stream ends with, or null for a normal close (1000), so that no failure ends a
     * session silently. It carries [closeCode][TollgateError.closeCode] and [mayReconnect][TollgateError.mayReconnect];
     * a provider's close is a [TollgateError.ProviderError] with the code as status and the reason as body.
     */
    public fun error(): TollgateError? {
        val text = message.ifEmpty { "The realtime session was closed with code $code." }
        val error = when (kind ?: return null) {
            "unauthorized" -> TollgateError.Unauthorized(text, errorType, null, errorReason)
            "attestationFailed" -> TollgateError.AttestationFailed(errorReason, text, errorType = errorType)
            "rateLimited" -> TollgateError.RateLimited(null, text, errorType, null, errorReason)
            "invalidRequest" -> TollgateError.InvalidRequest(text, errorType, null, errorReason)
            "networkError" -> TollgateError.NetworkError(null, text, errorType, null, errorReason)
            else -> TollgateError.ProviderError(code, message)
        }
        error.closeCode = code
        error.mayReconnect = mayReconnect
        return error
    }

    override fun toString(): String = "RealtimeClose($code, $reason)"

    public companion object {
        private const val NORMAL = 1000
        private val REASON = Regex("^[a-z][a-z0-9_]*$")

        /** Transport-level closes (RFC 6455 section 7.4.1 and the IANA registry): going away, no close frame, server trouble. */
        private val NETWORK_CLOSES = setOf(1001, 1006, 1011, 1012, 1013, 1014)
        private val GATEWAY_TYPES = mapOf(
            4400 to "invalidRequest", 4401 to "unauthorized", 4403 to "attestationFailed", 4429 to "rateLimited",
            4502 to "upstreamUnavailable", 4503 to "serviceUnavailable", 4504 to "upstreamTimeout",
        )
    }
}

/** How the tokens travel on a realtime upgrade (sdk/conformance/README.md, "subprotocols.json"). */
public enum class UpgradeMode {
    /** As headers on the upgrade request, like any proxied `GET` without a body: what this SDK does. */
    HEADERS,

    /** As subprotocols `tollgate.v1`, `tollgate-app.<app token>`, `tollgate-device.<device token>`: for clients that cannot set headers. */
    SUBPROTOCOLS,
}

/** The upgrade request of a realtime session: `ws`/`wss` URL, the headers the SDK sets, the subprotocols, the digest. */
public class BuiltUpgrade(
    public val url: String,
    public val pathWithQuery: String,
    public val headers: List<Pair<String, String>>,
    public val protocols: List<String>,
    /** What a `Tollgate-Assertion` on the upgrade signs (`GET`, empty body). */
    public val canonicalRequest: String,
    public val digest: String,
) {
    /** [protocols] as the `Sec-WebSocket-Protocol` header value, or null when there are none (no header). */
    public val secWebSocketProtocol: String? get() = protocols.takeIf { it.isNotEmpty() }?.joinToString(", ")
}

/** The rules of a realtime upgrade request, as a pure function (run by every vector of subprotocols.json). */
public object RealtimeUpgrade {
    private val TOKEN = Regex("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")

    /** Refuses a provider subprotocol that is not an RFC 9110 token or that starts with `tollgate` (any case). */
    public fun checkProtocols(protocols: List<String>) {
        for (protocol in protocols) {
            if (!TOKEN.matches(protocol)) throw TollgateError.InvalidRequest("Not a valid WebSocket subprotocol: \"$protocol\".", reason = "bad_protocol")
            if (protocol.lowercase().startsWith("tollgate")) {
                throw TollgateError.InvalidRequest("Subprotocols starting with \"tollgate\" are the SDK's: \"$protocol\".", reason = "bad_protocol")
            }
        }
    }

    /**
     * The upgrade for [endpoint]: the request-building URL with `http` → `ws`, `https` → `wss`; in [UpgradeMode.HEADERS]
     * the Tollgate headers of a `GET` without a body (plus `Tollgate-User-Token` when given) and the provider's
     * [protocols]; in [UpgradeMode.SUBPROTOCOLS] no headers and the tokens as subprotocols first. Refusals are
     * [TollgateError.InvalidRequest], before anything is sent.
     */
    public fun build(
        builder: RequestBuilder,
        appToken: String,
        endpoint: String,
        mode: UpgradeMode,
        deviceToken: String,
        userToken: String?,
        requestTimeMs: Long,
        protocols: List<String> = emptyList(),
        headers: Map<String, String> = emptyMap(),
    ): BuiltUpgrade {
        checkProtocols(protocols)
        val built = builder.build(TollgateRequest("GET", endpoint, null, emptyList(), headers), deviceToken, requestTimeMs)
        val url = built.url.replaceFirst(Regex("^(?i)http"), "ws")
        return when (mode) {
            UpgradeMode.HEADERS -> BuiltUpgrade(
                url, built.pathWithQuery,
                built.headers + listOfNotNull(userToken?.let { "Tollgate-User-Token" to it }),
                protocols, built.canonicalRequest, built.digest,
            )
            UpgradeMode.SUBPROTOCOLS -> BuiltUpgrade(
                url, built.pathWithQuery, emptyList(),
                listOf("tollgate.v1", "tollgate-app.$appToken", "tollgate-device.$deviceToken") + protocols,
                built.canonicalRequest, built.digest,
            )
        }
    }
}

/**
 * An open realtime session (from `realtime(endpoint)`). [messages] delivers the provider's frames in order and ends
 * when the session closes: normally for 1000, else with the close's [TollgateError] (see [RealtimeClose.error];
 * [closed] then says what happened and whether the app may reconnect). Collect it once. Reading is back-pressured: a
 * slow collector stops the socket's reader (and so, through TCP and the gateway, the provider).
 */
public class RealtimeSession internal constructor(
    /** Called on the socket's thread when the gateway closes the session (the device session applies 4403 `device_revoked`). */
    private val onGatewayClose: (RealtimeClose) -> Unit,
) {
    private val channel = Channel<RealtimeMessage>(capacity = 64)
    internal lateinit var socket: WebSocket

    @Volatile
    private var close: RealtimeClose? = null

    @Volatile
    internal var opened: ((Response) -> Unit)? = null

    @Volatile
    internal var refused: ((Throwable, Response?) -> Unit)? = null

    /** The frames from the provider; ends at the close (with its error, if any). */
    public val messages: Flow<RealtimeMessage> = channel.receiveAsFlow()

    /** The subprotocol the upgrade agreed on (`Sec-WebSocket-Protocol` of the answer), or null. */
    public var protocol: String? = null
        private set

    /** The close frame, once the session closed; null while open or after a network failure. */
    public val closed: RealtimeClose? get() = close

    /** Sends a text frame; false when the session is closing or its send buffer (16 MiB, OkHttp's) is full. */
    public fun send(text: String): Boolean = socket.send(text)

    /** Sends a binary frame (audio, typically). */
    public fun send(bytes: ByteArray): Boolean = socket.send(bytes.toByteString())

    /** Closes the session (normal closure by default); the gateway closes the provider's socket at once. */
    public fun close(code: Int = 1000, reason: String? = null) {
        socket.close(code, reason)
        channel.close()
    }

    /** Drops the connection without a close handshake. */
    public fun cancel() {
        socket.cancel()
        channel.close()
    }

    internal val listener: WebSocketListener = object : WebSocketListener() {
        override fun onOpen(webSocket: WebSocket, response: Response) {
            protocol = response.header("Sec-WebSocket-Protocol")
            opened?.invoke(response)
        }

        // trySendBlocking: the socket's reader thread waits while the collector is behind (backpressure, no unbounded
        // buffer); after the collector is gone it returns at once.
        override fun onMessage(webSocket: WebSocket, text: String) {
            channel.trySendBlocking(RealtimeMessage.Text(text))
        }

        override fun onMessage(webSocket: WebSocket, bytes: ByteString) {
            channel.trySendBlocking(RealtimeMessage.Binary(bytes.toByteArray()))
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            val frame = RealtimeClose(code, reason)
            close = frame
            if (frame.errorType != null) runCatching { onGatewayClose(frame) }
            channel.close(frame.error())
            // Answering the close may call onClosed at once on the writer thread: the channel is closed first.
            webSocket.close(if (code in 1000..4999 && code != 1005) code else 1000, null)
        }

        override fun onClosed(webSocket: WebSocket, code: Int, reason: String) {
            channel.close(close?.error())
        }

        override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) {
            val refusedHandler = refused
            if (refusedHandler != null) {
                refusedHandler(t, response)
                return
            }
            channel.close(ErrorMapper.noResponse(t))
        }
    }
}
