package dev.tollgate

import android.content.Context
import android.content.pm.ApplicationInfo
import android.os.Build
import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import android.security.keystore.StrongBoxUnavailableException
import android.util.Base64
import com.google.android.play.core.integrity.IntegrityManagerFactory
import com.google.android.play.core.integrity.IntegrityTokenRequest
import dev.tollgate.core.AttestationApi
import dev.tollgate.core.DeviceToken
import dev.tollgate.core.TollgateError
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.security.KeyPairGenerator
import java.security.KeyStore
import java.security.MessageDigest
import java.security.Signature
import java.security.spec.ECGenParameterSpec

/** How this device proves itself to the gateway, tried in the order configured. */
public enum class AttestationMethod(public val wireName: String) {
    /** Android Keystore hardware key attestation (`android-key-attestation`): the production path today. */
    KEY_ATTESTATION("android-key-attestation"),

    /** Play Integrity, classic request with the gateway's challenge as nonce (`android-play-integrity`). */
    PLAY_INTEGRITY("android-play-integrity"),
}

/**
 * Earns a device token (docs/guides/attestation.md): `POST /v1/attest/challenge`, then a platform attestation over the
 * challenge, then `POST /v1/attest/{method}`.
 */
internal class AndroidAttestor(
    private val context: Context,
    private val api: AttestationApi,
    private val configuration: TollgateConfiguration,
    private val store: PreferencesDeviceTokenStore,
) {
    suspend fun attest(): DeviceToken {
        developmentToken()?.let { token ->
            val body = JsonObject(mapOf("developmentToken" to JsonPrimitive(token), "deviceId" to JsonPrimitive(store.developmentDeviceId())))
            return api.exchange("development", body)
        }
        var last: TollgateError? = null
        for (method in configuration.attestationMethods) {
            try {
                return when (method) {
                    AttestationMethod.KEY_ATTESTATION -> keyAttestation()
                    AttestationMethod.PLAY_INTEGRITY -> playIntegrity()
                }
            } catch (error: CancellationException) {
                throw error
            } catch (error: TollgateError) {
                when (error) {
                    // Refused by the gateway (e.g. software-only keys on this device) or not served by it: try the next method.
                    is TollgateError.AttestationFailed -> last = error
                    is TollgateError.InvalidRequest -> last = TollgateError.AttestationFailed(
                        "${method.wireName}_refused", error.message ?: "Refused.", errorType = error.errorType, requestId = error.requestId,
                    )
                    // Offline, rate-limited, bad app token: another method would fail the same way.
                    else -> throw error
                }
            } catch (error: Exception) {
                last = TollgateError.AttestationFailed("${method.wireName}_unavailable", cause = error)
            }
        }
        throw last ?: TollgateError.AttestationFailed("no_attestation_method", "No attestation method is configured.")
    }

    /**
     * The development token, only in a debuggable app. The app passes it only from debug builds
     * (`if (BuildConfig.DEBUG) "dt_…" else null`); this library checks the app's own debuggable flag as well, because its
     * own `BuildConfig.DEBUG` describes how the library was built, not the app.
     */
    private fun developmentToken(): String? {
        val token = configuration.developmentToken?.takeIf { it.isNotBlank() } ?: return null
        val debuggable = (context.applicationInfo.flags and ApplicationInfo.FLAG_DEBUGGABLE) != 0
        if (!debuggable) {
            throw TollgateError.AttestationFailed(
                "development_in_release",
                "A development token was configured in a release (non-debuggable) build. Pass it only when BuildConfig.DEBUG is true.",
            )
        }
        return token
    }

    /**
     * Generates a Keystore EC key whose attestation certificate carries the challenge
     * (`KeyGenParameterSpec.Builder.setAttestationChallenge`), and sends the chain leaf first, root last.
     */
    private suspend fun keyAttestation(): DeviceToken {
        refreshWithAttestedKey()?.let { return it }
        val challenge = api.challenge()
        val chain = withContext(Dispatchers.IO) {
            try {
                generateAttestedKey(challenge.bytes(), strongBox = Build.VERSION.SDK_INT >= Build.VERSION_CODES.P)
            } catch (_: StrongBoxUnavailableException) {
                generateAttestedKey(challenge.bytes(), strongBox = false)
            }
        }
        val body = JsonObject(
            mapOf(
                "challenge" to JsonPrimitive(challenge.value),
                "chain" to JsonArray(chain.map { JsonPrimitive(Base64.encodeToString(it, Base64.NO_WRAP)) }),
            ),
        )
        return api.exchange(AttestationMethod.KEY_ATTESTATION.wireName, body)
    }

    /**
     * A refresh signed by the key attested earlier: `{"challenge", "keyId", "signature"}`, the signature (ECDSA, SHA-256)
     * over the challenge's UTF-8 bytes. The device keeps its id (SHA-256 of the key) and its limits across refreshes.
     * Null when there is no key yet or the gateway no longer knows it: then a new key is attested.
     */
    private suspend fun refreshWithAttestedKey(): DeviceToken? {
        val entry = withContext(Dispatchers.IO) {
            val keyStore = KeyStore.getInstance(ANDROID_KEYSTORE).apply { load(null) }
            keyStore.getEntry(KEY_ALIAS, null) as? KeyStore.PrivateKeyEntry
        } ?: return null
        val challenge = api.challenge()
        val keyId = MessageDigest.getInstance("SHA-256").digest(entry.certificate.publicKey.encoded).joinToString("") { "%02x".format(it) }
        val signature = withContext(Dispatchers.IO) {
            Signature.getInstance("SHA256withECDSA").run {
                initSign(entry.privateKey)
                update(challenge.value.toByteArray(Charsets.UTF_8))
                sign()
            }
        }
        val body = JsonObject(
            mapOf(
                "challenge" to JsonPrimitive(challenge.value),
                "keyId" to JsonPrimitive(keyId),
                "signature" to JsonPrimitive(Base64.encodeToString(signature, Base64.NO_WRAP)),
            ),
        )
        return try {
            api.exchange(AttestationMethod.KEY_ATTESTATION.wireName, body)
        } catch (_: TollgateError.AttestationFailed) {
            null
        }
    }

    private fun generateAttestedKey(challenge: ByteArray, strongBox: Boolean): List<ByteArray> {
        val builder = KeyGenParameterSpec.Builder(KEY_ALIAS, KeyProperties.PURPOSE_SIGN)
            .setAlgorithmParameterSpec(ECGenParameterSpec("secp256r1"))
            .setDigests(KeyProperties.DIGEST_SHA256)
            .setAttestationChallenge(challenge)
        if (strongBox && Build.VERSION.SDK_INT >= Build.VERSION_CODES.P) builder.setIsStrongBoxBacked(true)
        val generator = KeyPairGenerator.getInstance(KeyProperties.KEY_ALGORITHM_EC, ANDROID_KEYSTORE)
        generator.initialize(builder.build())
        generator.generateKeyPair()
        val keyStore = KeyStore.getInstance(ANDROID_KEYSTORE).apply { load(null) }
        val chain = keyStore.getCertificateChain(KEY_ALIAS)
        if (chain.isNullOrEmpty()) throw IllegalStateException("The Keystore returned no attestation certificate chain.")
        return chain.map { it.encoded }
    }

    /** Play Integrity classic request; the gateway's challenge (base64url) is the nonce, as Play requires web-safe base64. */
    private suspend fun playIntegrity(): DeviceToken {
        val challenge = api.challenge()
        val request = IntegrityTokenRequest.builder().setNonce(challenge.value).apply {
            configuration.cloudProjectNumber?.let { setCloudProjectNumber(it) }
        }.build()
        val response = IntegrityManagerFactory.create(context).requestIntegrityToken(request).awaitResult()
        val body = JsonObject(
            mapOf(
                "challenge" to JsonPrimitive(challenge.value),
                "integrityToken" to JsonPrimitive(response.token()),
                "deviceId" to JsonPrimitive(store.installationId()),
            ),
        )
        return api.exchange(AttestationMethod.PLAY_INTEGRITY.wireName, body)
    }

    private companion object {
        const val ANDROID_KEYSTORE = "AndroidKeyStore"
        const val KEY_ALIAS = "dev.tollgate.device-key"
    }
}
