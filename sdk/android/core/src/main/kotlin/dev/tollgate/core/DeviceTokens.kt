package dev.tollgate.core

/**
 * A device token from `POST /v1/attest/{method}` (protocol.md, "Device tokens").
 *
 * @property expiresAtMs unix ms after which the gateway refuses it: the earlier of `expiresAt` and the JWS `exp`.
 * @property receivedAtMs unix ms when it was received (sizes the refresh margin).
 * @property deviceId the gateway's id of this device (`deviceId` of the answer), when it sent one.
 */
public class DeviceToken(
    public val token: String,
    public val expiresAtMs: Long,
    public val receivedAtMs: Long,
    public val deviceId: String? = null,
) {
    override fun toString(): String = "DeviceToken(expiresAtMs=$expiresAtMs, deviceId=$deviceId)"
}

/** Where the client gets its `Tollgate-Device-Token`, and whom it tells when the gateway refuses one. */
public interface DeviceTokenSource {
    /** A token valid for at least the refresh margin; attests when needed. Throws [TollgateError]. */
    public suspend fun deviceToken(): String

    /**
     * The gateway refused a call made with [token] with [error]: apply the reason's action ([ReasonAction]) and return it.
     * The client sends the call once more when [ReasonAction.retryOnce].
     */
    public suspend fun report(token: String?, error: TollgateError): ReasonAction = ReasonAction.of(error)

    /** `Tollgate-Assertion` over the 32-byte request digest, or null when none is sent. */
    public suspend fun assertion(digest: ByteArray): String? = null
}

/** A fixed token (tests, server-side tools). */
public class StaticDeviceToken(private val token: String) : DeviceTokenSource {
    override suspend fun deviceToken(): String = token
}

/** Keeps a device token across process restarts (Android: Keystore-encrypted preferences). */
public interface DeviceTokenStore {
    public fun load(): DeviceToken?
    public fun save(token: DeviceToken?)
}
