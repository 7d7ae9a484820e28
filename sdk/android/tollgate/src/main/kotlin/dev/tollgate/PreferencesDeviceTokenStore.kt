package dev.tollgate

import android.content.Context
import android.content.SharedPreferences
import dev.tollgate.core.DeviceToken
import dev.tollgate.core.DeviceTokenStore
import java.util.UUID

/**
 * Keeps the device token across process restarts in the app's private preferences, so that a cold start does not
 * attest again. A device token is short-lived (1 hour by default) and bound to this app on the gateway.
 */
internal class PreferencesDeviceTokenStore(context: Context, appToken: String) : DeviceTokenStore {
    // One file per app token, so that switching gateways or apps never reuses another app's token.
    private val preferences: SharedPreferences =
        context.getSharedPreferences("dev.tollgate." + Integer.toHexString(appToken.hashCode()), Context.MODE_PRIVATE)

    override fun load(): DeviceToken? {
        val token = preferences.getString(TOKEN, null) ?: return null
        return DeviceToken(token, preferences.getLong(EXPIRES_AT, 0), preferences.getLong(RECEIVED_AT, 0))
    }

    override fun save(token: DeviceToken?) {
        preferences.edit().apply {
            if (token == null) {
                remove(TOKEN).remove(EXPIRES_AT).remove(RECEIVED_AT)
            } else {
                putString(TOKEN, token.token).putLong(EXPIRES_AT, token.expiresAtMs).putLong(RECEIVED_AT, token.receivedAtMs)
            }
        }.apply()
    }

    /** A random id for development attestation (emulators have no hardware identity); stable per installation. */
    fun developmentDeviceId(): String {
        preferences.getString(DEVELOPMENT_DEVICE_ID, null)?.let { return it }
        val id = "dev-" + UUID.randomUUID().toString()
        preferences.edit().putString(DEVELOPMENT_DEVICE_ID, id).apply()
        return id
    }

    /**
     * A random installation id, stable per installation: Play Integrity names no device key, so the gateway identifies
     * the device by this id (`pi:<id>`) for revocation and per-device limits.
     */
    fun installationId(): String {
        preferences.getString(INSTALLATION_ID, null)?.let { return it }
        val id = "inst-" + UUID.randomUUID().toString()
        preferences.edit().putString(INSTALLATION_ID, id).apply()
        return id
    }

    private companion object {
        const val INSTALLATION_ID = "installationId"
        const val TOKEN = "deviceToken"
        const val EXPIRES_AT = "expiresAtMs"
        const val RECEIVED_AT = "receivedAtMs"
        const val DEVELOPMENT_DEVICE_ID = "developmentDeviceId"
    }
}
