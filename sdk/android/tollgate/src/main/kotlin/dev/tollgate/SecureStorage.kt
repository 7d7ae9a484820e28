package dev.tollgate

import android.content.Context
import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import android.util.Base64
import dev.tollgate.core.DeviceToken
import dev.tollgate.core.DeviceTokenStore
import dev.tollgate.core.Digest
import java.security.KeyStore
import java.util.UUID
import javax.crypto.Cipher
import javax.crypto.KeyGenerator
import javax.crypto.SecretKey
import javax.crypto.spec.GCMParameterSpec

/**
 * The SDK's persistent state, in `no_backup/dev.tollgate.properties` ([STATE_FILE]) under the app's private storage:
 * - the device token, encrypted with AES-256-GCM under a non-exportable Android Keystore key (so a copy of the file
 *   is useless elsewhere), one entry per app token, so that switching apps or gateways never reuses another's token;
 * - the installation id (Play Integrity and development attestation name the device by it) and the last attestation
 *   method.
 * `Context.getNoBackupFilesDir()` is never part of cloud backup or device transfer, whatever the app's manifest says, so
 * the library needs no `<application>` backup attributes (which would clash in a fresh app's manifest merge): a restored
 * phone attests as a new device, never as the old one.
 */
internal class SecureStorage(context: Context, appToken: String) : DeviceTokenStore {
    private val preferences = NoBackupPreferences(java.io.File(context.noBackupFilesDir, STATE_FILE))

    /** Entries are per app token (a hash of it, never the token itself). */
    private val scope = Digest.sha256Hex(appToken.toByteArray(Charsets.UTF_8)).substring(0, 16)

    override fun load(): DeviceToken? {
        val sealed = preferences.getString(key(TOKEN), null) ?: return null
        val token = try {
            open(sealed)
        } catch (_: Exception) {
            // Another device's file (restored by hand), or the Keystore key is gone: attest again.
            save(null)
            return null
        }
        return DeviceToken(token, preferences.getLong(key(EXPIRES_AT), 0), preferences.getLong(key(RECEIVED_AT), 0), preferences.getString(key(DEVICE_ID), null))
    }

    override fun save(token: DeviceToken?) {
        val editor = preferences.edit()
        if (token == null) {
            editor.remove(key(TOKEN)).remove(key(EXPIRES_AT)).remove(key(RECEIVED_AT)).remove(key(DEVICE_ID))
        } else {
            editor.putString(key(TOKEN), seal(token.token))
                .putLong(key(EXPIRES_AT), token.expiresAtMs)
                .putLong(key(RECEIVED_AT), token.receivedAtMs)
            val deviceId = token.deviceId
            if (deviceId != null) editor.putString(key(DEVICE_ID), deviceId) else editor.remove(key(DEVICE_ID))
        }
        editor.apply()
    }

    /** A random id, stable for this installation (never backed up): [prefix] + UUID. */
    @Synchronized
    fun installationId(prefix: String): String {
        val name = INSTALLATION_ID + prefix
        preferences.getString(name, null)?.let { return it }
        val id = prefix + UUID.randomUUID().toString()
        preferences.edit().putString(name, id).apply()
        return id
    }

    fun lastMethod(): String? = preferences.getString(key(LAST_METHOD), null)

    fun setLastMethod(method: String) {
        preferences.edit().putString(key(LAST_METHOD), method).apply()
    }

    private fun key(name: String) = "$scope.$name"

    private fun seal(plain: String): String {
        val cipher = Cipher.getInstance(TRANSFORMATION)
        cipher.init(Cipher.ENCRYPT_MODE, secretKey())
        val sealed = cipher.iv + cipher.doFinal(plain.toByteArray(Charsets.UTF_8))
        return Base64.encodeToString(sealed, Base64.NO_WRAP)
    }

    private fun open(sealed: String): String {
        val bytes = Base64.decode(sealed, Base64.NO_WRAP)
        val cipher = Cipher.getInstance(TRANSFORMATION)
        cipher.init(Cipher.DECRYPT_MODE, secretKey(create = false) ?: throw IllegalStateException("no key"), GCMParameterSpec(128, bytes, 0, IV_BYTES))
        return cipher.doFinal(bytes, IV_BYTES, bytes.size - IV_BYTES).toString(Charsets.UTF_8)
    }

    private fun secretKey(create: Boolean = true): SecretKey? {
        val keyStore = KeyStore.getInstance(ANDROID_KEYSTORE).apply { load(null) }
        (keyStore.getEntry(KEY_ALIAS, null) as? KeyStore.SecretKeyEntry)?.let { return it.secretKey }
        if (!create) return null
        val generator = KeyGenerator.getInstance(KeyProperties.KEY_ALGORITHM_AES, ANDROID_KEYSTORE)
        generator.init(
            KeyGenParameterSpec.Builder(KEY_ALIAS, KeyProperties.PURPOSE_ENCRYPT or KeyProperties.PURPOSE_DECRYPT)
                .setBlockModes(KeyProperties.BLOCK_MODE_GCM)
                .setEncryptionPaddings(KeyProperties.ENCRYPTION_PADDING_NONE)
                .setKeySize(256)
                .build(),
        )
        return generator.generateKey()
    }

    internal companion object {
        /** The state file, in `no_backup/` (never backed up). */
        const val STATE_FILE = "dev.tollgate.properties"
        private const val ANDROID_KEYSTORE = "AndroidKeyStore"
        private const val KEY_ALIAS = "dev.tollgate.token-key"
        private const val TRANSFORMATION = "AES/GCM/NoPadding"
        private const val IV_BYTES = 12
        private const val TOKEN = "deviceToken"
        private const val EXPIRES_AT = "expiresAtMs"
        private const val RECEIVED_AT = "receivedAtMs"
        private const val DEVICE_ID = "deviceId"
        private const val LAST_METHOD = "lastMethod"
        private const val INSTALLATION_ID = "installationId."
    }
}
