package dev.tollgate.flutter

import android.os.Build
import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import android.security.keystore.StrongBoxUnavailableException
import android.util.Base64
import io.flutter.embedding.engine.plugins.FlutterPlugin
import io.flutter.plugin.common.MethodCall
import io.flutter.plugin.common.MethodChannel
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import java.security.KeyPairGenerator
import java.security.KeyStore
import java.security.Signature
import java.security.spec.ECGenParameterSpec

/**
 * Serves the MethodChannel `dev.tollgate/attestation` for the Dart SDK (lib/src/native_attestation.dart) with the
 * Android attestation of the Tollgate SDK (`dev.tollgate`, sdk/android): Keystore hardware key attestation.
 *
 * - `attest` `{challenge}` → `{method: "android-key-attestation", body: {challenge, chain: [leaf, …, root]}}`: an EC P-256
 *   key (StrongBox when available) generated with `setAttestationChallenge(base64url-decode(challenge))`, its
 *   certificate chain in base64 DER, leaf first — the body `POST /v1/attest/android-key-attestation` takes.
 * - `assert` `{digest}` → base64url of the key's SHA256withECDSA signature over the 32 digest bytes, or null when no key
 *   has been attested yet.
 *
 * The Android SDK's attestor (`dev.tollgate.AndroidAttestor`) does the whole HTTP exchange itself and is internal, so
 * this class performs the same Keystore steps and leaves the HTTP part to the Dart side.
 */
class TollgatePlugin : FlutterPlugin, MethodChannel.MethodCallHandler {
    private var channel: MethodChannel? = null
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Main)

    override fun onAttachedToEngine(binding: FlutterPlugin.FlutterPluginBinding) {
        channel = MethodChannel(binding.binaryMessenger, CHANNEL).also { it.setMethodCallHandler(this) }
    }

    override fun onDetachedFromEngine(binding: FlutterPlugin.FlutterPluginBinding) {
        channel?.setMethodCallHandler(null)
        channel = null
        scope.cancel()
    }

    override fun onMethodCall(call: MethodCall, result: MethodChannel.Result) {
        when (call.method) {
            "attest" -> {
                val challenge = call.argument<String>("challenge")
                    ?: return result.error("bad_arguments", "attest needs {challenge}.", null)
                scope.launch {
                    try {
                        val chain = withContext(Dispatchers.IO) { attestedChain(challenge) }
                        result.success(mapOf("method" to "android-key-attestation", "body" to mapOf("challenge" to challenge, "chain" to chain)))
                    } catch (error: Exception) {
                        result.error("key_attestation_unavailable", error.message ?: error.toString(), null)
                    }
                }
            }
            "assert" -> {
                val digest = call.argument<String>("digest")
                    ?: return result.error("bad_arguments", "assert needs {digest}.", null)
                scope.launch {
                    try {
                        result.success(withContext(Dispatchers.IO) { sign(digest) })
                    } catch (error: Exception) {
                        result.error("assertion_failed", error.message ?: error.toString(), null)
                    }
                }
            }
            else -> result.notImplemented()
        }
    }

    /** A new attested key over [challenge]; its certificate chain, leaf first, as base64 DER. */
    private fun attestedChain(challenge: String): List<String> {
        val challengeBytes = Base64.decode(challenge, Base64.URL_SAFE or Base64.NO_WRAP or Base64.NO_PADDING)
        val strongBox = Build.VERSION.SDK_INT >= Build.VERSION_CODES.P
        try {
            generateKey(challengeBytes, strongBox)
        } catch (error: StrongBoxUnavailableException) {
            generateKey(challengeBytes, false)
        }
        val keyStore = KeyStore.getInstance(ANDROID_KEYSTORE).apply { load(null) }
        val chain = keyStore.getCertificateChain(KEY_ALIAS)
        if (chain.isNullOrEmpty()) throw IllegalStateException("The Keystore returned no attestation certificate chain.")
        return chain.map { Base64.encodeToString(it.encoded, Base64.NO_WRAP) }
    }

    private fun generateKey(challenge: ByteArray, strongBox: Boolean) {
        val builder = KeyGenParameterSpec.Builder(KEY_ALIAS, KeyProperties.PURPOSE_SIGN)
            .setAlgorithmParameterSpec(ECGenParameterSpec("secp256r1"))
            .setDigests(KeyProperties.DIGEST_SHA256)
            .setAttestationChallenge(challenge)
        if (strongBox && Build.VERSION.SDK_INT >= Build.VERSION_CODES.P) builder.setIsStrongBoxBacked(true)
        val generator = KeyPairGenerator.getInstance(KeyProperties.KEY_ALGORITHM_EC, ANDROID_KEYSTORE)
        generator.initialize(builder.build())
        generator.generateKeyPair()
    }

    /** base64url SHA256withECDSA signature of the digest bytes with the attested key, or null without one. */
    private fun sign(digestHex: String): String? {
        require(digestHex.length == 64 && digestHex.all { it in '0'..'9' || it in 'a'..'f' || it in 'A'..'F' }) {
            "The request digest must be 64 hex digits."
        }
        val keyStore = KeyStore.getInstance(ANDROID_KEYSTORE).apply { load(null) }
        val entry = keyStore.getEntry(KEY_ALIAS, null) as? KeyStore.PrivateKeyEntry ?: return null
        val digest = ByteArray(32) { index -> digestHex.substring(index * 2, index * 2 + 2).toInt(16).toByte() }
        val signature = Signature.getInstance("SHA256withECDSA").run {
            initSign(entry.privateKey)
            update(digest)
            sign()
        }
        return Base64.encodeToString(signature, Base64.URL_SAFE or Base64.NO_WRAP or Base64.NO_PADDING)
    }

    private companion object {
        const val CHANNEL = "dev.tollgate/attestation"
        const val ANDROID_KEYSTORE = "AndroidKeyStore"
        const val KEY_ALIAS = "dev.tollgate.flutter.device-key"
    }
}
