package dev.tollgate

import android.content.Context
import android.content.pm.ApplicationInfo
import android.os.Build
import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import android.security.keystore.StrongBoxUnavailableException
import com.google.android.play.core.integrity.IntegrityManagerFactory
import com.google.android.play.core.integrity.IntegrityTokenRequest
import com.google.android.play.core.integrity.StandardIntegrityManager
import dev.tollgate.core.AttestationApi
import dev.tollgate.core.AttestationBodies
import dev.tollgate.core.Attestor
import dev.tollgate.core.DeviceToken
import dev.tollgate.core.Proofs
import dev.tollgate.core.ReasonAction
import dev.tollgate.core.TollgateError
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import java.security.KeyPairGenerator
import java.security.KeyStore
import java.security.Signature
import java.security.spec.ECGenParameterSpec

/** How this device proves itself to the gateway, tried in the order configured. */
public enum class AttestationMethod(public val wireName: String) {
    /** Android Keystore hardware key attestation (`android-key-attestation`); refreshes are signatures by the same key. */
    KEY_ATTESTATION("android-key-attestation"),

    /**
     * Play Integrity (`android-play-integrity`): a **standard** request (warm-up provider, `requestHash` bound to the
     * challenge and the installation id) when a Cloud project number is known, a classic request (same binding as the
     * nonce) only as a fallback. The device is the installation id; a refresh is another request with the same id.
     */
    PLAY_INTEGRITY("android-play-integrity"),
}

/**
 * The Android steps of attestation for [dev.tollgate.core.DeviceSession], which decides when each runs (and never
 * calls [attestNewKey] after `device_revoked`). Each exchange fetches its own challenge.
 */
internal class AndroidAttestor(
    private val context: Context,
    private val configuration: TollgateConfiguration,
    private val storage: SecureStorage,
) : Attestor {
    private val providerMutex = Mutex()
    private var standardProvider: StandardIntegrityManager.StandardIntegrityTokenProvider? = null

    /** The identity the device already has: development token, the attested key, or the Play Integrity installation. */
    override suspend fun refresh(api: AttestationApi): DeviceToken? {
        developmentToken()?.let { token ->
            return api.exchange("development", AttestationBodies.development(token, storage.installationId("dev-")))
        }
        // The method that earned the last token; a key that the gateway refused earlier (then Play Integrity
        // succeeded) is not tried again on every refresh.
        if (storage.lastMethod() == AttestationMethod.PLAY_INTEGRITY.wireName) return playIntegrity(api)
        if (withContext(Dispatchers.IO) { keyEntry() } != null) return keySignatureRefresh(api)
        return null
    }

    /** A new identity: the configured methods in order (a refused or unavailable method passes to the next; a revocation never does). */
    override suspend fun attestNewKey(api: AttestationApi): DeviceToken {
        developmentToken()?.let { token ->
            return api.exchange("development", AttestationBodies.development(token, storage.installationId("dev-")))
        }
        var last: TollgateError? = null
        for (method in configuration.attestationMethods) {
            try {
                val token = when (method) {
                    AttestationMethod.KEY_ATTESTATION -> keyAttestation(api)
                    AttestationMethod.PLAY_INTEGRITY -> playIntegrity(api)
                }
                storage.setLastMethod(method.wireName)
                return token
            } catch (error: CancellationException) {
                throw error
            } catch (error: TollgateError) {
                // A revoked device stays revoked whatever the method; offline, rate-limited or a bad app token would
                // fail the same way with another method.
                if (ReasonAction.of(error) == ReasonAction.STOP) throw error
                last = when (error) {
                    is TollgateError.AttestationFailed -> error
                    is TollgateError.InvalidRequest -> TollgateError.AttestationFailed(
                        "${method.wireName.replace('-', '_')}_refused", error.message ?: "Refused.", errorType = error.errorType, requestId = error.requestId,
                    )
                    else -> throw error
                }
            } catch (error: Exception) {
                last = TollgateError.AttestationFailed("${method.wireName.replace('-', '_')}_unavailable", cause = error)
            }
        }
        throw last ?: TollgateError.AttestationFailed("no_attestation_method", "No attestation method is configured.")
    }

    /** SHA256withECDSA by the attested key over the 32-byte request digest; null without a key. */
    override suspend fun sign(digest: ByteArray): ByteArray? = withContext(Dispatchers.IO) {
        val entry = keyEntry() ?: return@withContext null
        Signature.getInstance("SHA256withECDSA").run {
            initSign(entry.privateKey)
            update(digest)
            sign()
        }
    }

    /**
     * Every-request mode (docs/guides/attestation.md): a Play Integrity device sends, verbatim, the token of a **standard**
     * request whose `requestHash` is base64url-nopad of the 32-byte request digest (a classic request cannot carry it);
     * a key-attested device sends its key's signature. A device attested in development mode has no proof (null).
     */
    override suspend fun assertion(digest: ByteArray): String? {
        if (developmentTokenOrNull() != null) return null
        if (storage.lastMethod() != AttestationMethod.PLAY_INTEGRITY.wireName) return super.assertion(digest)
        return try {
            standardToken(Proofs.playIntegrityAssertionHash(digest))
        } catch (error: CancellationException) {
            throw error
        } catch (error: Exception) {
            throw TollgateError.AttestationFailed("play_integrity_unavailable", "A Play Integrity standard token could not be requested: ${error.message}", cause = error)
        } ?: throw TollgateError.AttestationFailed(
            "play_integrity_not_configured",
            "Every-request mode with Play Integrity needs the Cloud project number (TollgateConfiguration.cloudProjectNumber or the manifest's dev.tollgate.CLOUD_PROJECT_NUMBER).",
        )
    }

    private fun developmentTokenOrNull(): String? = configuration.developmentToken?.takeIf { it.isNotBlank() }

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

    private fun keyEntry(): KeyStore.PrivateKeyEntry? {
        val keyStore = KeyStore.getInstance(ANDROID_KEYSTORE).apply { load(null) }
        return keyStore.getEntry(KEY_ALIAS, null) as? KeyStore.PrivateKeyEntry
    }

    /**
     * A new Keystore EC P-256 key whose attestation certificate carries the base64url-decoded challenge
     * (`setAttestationChallenge`), StrongBox when available; the chain goes leaf first, root last.
     */
    private suspend fun keyAttestation(api: AttestationApi): DeviceToken {
        val challenge = api.challenge()
        val attestationChallenge = Proofs.keyAttestationChallenge(challenge.value)
        val chain = withContext(Dispatchers.IO) {
            try {
                generateAttestedKey(attestationChallenge, strongBox = Build.VERSION.SDK_INT >= Build.VERSION_CODES.P)
            } catch (_: StrongBoxUnavailableException) {
                generateAttestedKey(attestationChallenge, strongBox = false)
            }
        }
        return api.exchange(AttestationMethod.KEY_ATTESTATION.wireName, AttestationBodies.keyAttestation(challenge.value, chain))
    }

    /**
     * A refresh signed by the key attested earlier: `{"challenge", "keyId", "signature"}`, SHA256withECDSA over the
     * challenge's UTF-8 bytes; keyId = hex SHA-256 of the key's SubjectPublicKeyInfo. The device keeps its id and its
     * limits. A refusal is thrown as it is: the session decides (a new key only after `device_key_unknown`).
     */
    private suspend fun keySignatureRefresh(api: AttestationApi): DeviceToken {
        val challenge = api.challenge()
        val (keyId, signature) = withContext(Dispatchers.IO) {
            val entry = keyEntry() ?: throw TollgateError.AttestationFailed("key_attestation_unavailable", "The attested key is gone.")
            val signature = Signature.getInstance("SHA256withECDSA").run {
                initSign(entry.privateKey)
                update(Proofs.refreshMessage(challenge.value))
                sign()
            }
            Proofs.keyId(entry.certificate.publicKey.encoded) to signature
        }
        return api.exchange(AttestationMethod.KEY_ATTESTATION.wireName, AttestationBodies.keyRefresh(challenge.value, keyId, signature))
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

    /**
     * Play Integrity over a fresh challenge, bound by requestHash = base64url-nopad(SHA-256(challenge + "\n" +
     * installation id)). Standard request first (needs the Cloud project number); classic only when the standard one
     * cannot be made on this device (no project number, Play services too old, provider unavailable).
     */
    private suspend fun playIntegrity(api: AttestationApi): DeviceToken {
        val installationId = storage.installationId("inst-")
        val challenge = api.challenge()
        val binding = Proofs.playIntegrityRequestHash(challenge.value, installationId)
        val standard = try {
            standardToken(binding)
        } catch (error: CancellationException) {
            throw error
        } catch (_: Exception) {
            null
        }
        if (standard != null) {
            return api.exchange(AttestationMethod.PLAY_INTEGRITY.wireName, AttestationBodies.playIntegrity(challenge.value, standard, installationId, "standard"))
        }
        val request = IntegrityTokenRequest.builder().setNonce(binding).apply {
            cloudProjectNumber()?.let { setCloudProjectNumber(it) }
        }.build()
        val classic = IntegrityManagerFactory.create(context).requestIntegrityToken(request).awaitResult().token()
        return api.exchange(AttestationMethod.PLAY_INTEGRITY.wireName, AttestationBodies.playIntegrity(challenge.value, classic, installationId, "classic"))
    }

    /** A standard request through the warmed-up provider (prepared once per process, re-prepared once if it expired). Null without a project number. */
    private suspend fun standardToken(requestHash: String): String? {
        val projectNumber = cloudProjectNumber() ?: return null
        val request = StandardIntegrityManager.StandardIntegrityTokenRequest.builder().setRequestHash(requestHash).build()
        return try {
            provider(projectNumber, fresh = false).request(request).awaitResult().token()
        } catch (error: CancellationException) {
            throw error
        } catch (_: Exception) {
            // The provider may have expired (INTEGRITY_TOKEN_PROVIDER_INVALID): prepare a new one, once.
            provider(projectNumber, fresh = true).request(request).awaitResult().token()
        }
    }

    private suspend fun provider(projectNumber: Long, fresh: Boolean): StandardIntegrityManager.StandardIntegrityTokenProvider = providerMutex.withLock {
        if (!fresh) standardProvider?.let { return@withLock it }
        val prepare = StandardIntegrityManager.PrepareIntegrityTokenRequest.builder().setCloudProjectNumber(projectNumber).build()
        IntegrityManagerFactory.createStandard(context).prepareIntegrityToken(prepare).awaitResult().also { standardProvider = it }
    }

    /** Warms the standard provider up (run at initialize: preparing takes a few seconds); failures are left for the request. */
    override suspend fun warmUp() {
        if (configuration.developmentToken != null || AttestationMethod.PLAY_INTEGRITY !in configuration.attestationMethods) return
        val projectNumber = cloudProjectNumber() ?: return
        runCatching { provider(projectNumber, fresh = false) }
    }

    private fun cloudProjectNumber(): Long? = configuration.cloudProjectNumber ?: Tollgate.manifestMetaData(context, Tollgate.CLOUD_PROJECT_NUMBER_META_DATA)?.toLongOrNull()

    private companion object {
        const val ANDROID_KEYSTORE = "AndroidKeyStore"
        const val KEY_ALIAS = "dev.tollgate.device-key"
    }
}
