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
 * `reason` as the close reason) and the typed error it maps to.
 */
public class RealtimeClose(public val code: Int, public val reason: String) {
    /** The gateway's error type for its own close codes, else null. */
    public val errorType: String? get() = GATEWAY_TYPES[code]

    /** The app's next step. A 4403 never re-keys: `device_revoked` stops, anything else changes nothing. */
    public val action: RealtimeAction
        get() = when {
            code == 4503 -> RealtimeAction.RECONNECT
            code == 4403 && reason == DeviceSession.REVOKED -> RealtimeAction.STOP
            else -> RealtimeAction.NONE
        }

    /** True for 4503: the app may reconnect at once. */
    public val mayReconnect: Boolean get() = action == RealtimeAction.RECONNECT

    /**
     * The typed error, or null for a normal close (1000, 1001, 1005). Every 44xx is the gateway's refusal kind by its
     * code, every 45xx a networkError; another code (the provider's own close, passed through) is a providerError with
     * the code as status and the reason as body, so that no failure ends a session silently.
     */
    public fun error(): TollgateError? {
        val reasonOrNull = reason.takeIf { it.isNotEmpty() && REASON.matches(it) }
        val message = "The realtime session was closed ($code${if (reason.isNotEmpty()) " $reason" else ""})."
        return when (code) {
            1000, 1001, 1005 -> null
            4401 -> TollgateError.Unauthorized(message, errorType, null, reasonOrNull)
            4403 -> TollgateError.AttestationFailed(reasonOrNull, message, errorType = errorType)
            4429 -> TollgateError.RateLimited(null, message, errorType, null, reasonOrNull)
            in 4400..4499 -> TollgateError.InvalidRequest(message, errorType ?: "invalidRequest", null, reasonOrNull)
            in 4500..4599 -> TollgateError.NetworkError(null, message, errorType ?: "upstreamUnavailable", null, reasonOrNull)
            else -> TollgateError.ProviderError(code, reason)
        }
    }

    override fun toString(): String = "RealtimeClose($code, $reason)"

    public companion object {
        private val REASON = Regex("^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
        private val GATEWAY_TYPES = mapOf(
            4400 to "invalidRequest", 4401 to "unauthorized", 4403 to "attestationFailed", 4429 to "rateLimited",
            4502 to "upstreamUnavailable", 4503 to "serviceUnavailable", 4504 to "upstreamTimeout",
        )
    }
}

/**
 * An open realtime session (from `realtime(endpoint)`). [messages] delivers the provider's frames in order and ends
 * when the session closes: normally for 1000/1001, else with the close's [TollgateError] (see [RealtimeClose.error];
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
