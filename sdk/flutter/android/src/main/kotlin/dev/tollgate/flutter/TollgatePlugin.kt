package dev.tollgate.flutter

import android.content.Context
import dev.tollgate.TollgateBridge
import io.flutter.embedding.engine.plugins.FlutterPlugin
import io.flutter.plugin.common.MethodCall
import io.flutter.plugin.common.MethodChannel
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext

/**
 * Serves the MethodChannel `dev.tollgate/native` for the Dart SDK with the Tollgate Android SDK (`dev.tollgate`,
 * sdk/android/tollgate): the device-token lifecycle (key attestation, signature refresh, Play Integrity standard
 * requests, Keystore-backed persistence, revocation) is the SDK's [dev.tollgate.core.DeviceSession], reached through
 * [TollgateBridge]. This plugin makes no key and keeps no token of its own.
 *
 * | method | arguments | result |
 * |---|---|---|
 * | `getConfiguration` | — | `{gatewayUrl: String?}` (AndroidManifest meta-data `dev.tollgate.GATEWAY_URL`) |
 * | `configure` | `{appToken, gatewayUrl, developmentToken?}` | null |
 * | `deviceToken` | `{forceRefresh: bool}` | `{deviceToken, expiresAtMs, deviceId}` |
 * | `reportError` | `{deviceToken, reason?}` | `{action: stop/refresh/attest/assert/none}` |
 * | `assertion` | `{digest: base64 of 32 bytes}` | `{assertion: String?}` |
 * | `clear` | — | null |
 *
 * A failure is `result.error(kind, message, {"reason": reason})`, kind being the SDK error kind (`attestationFailed`,
 * `invalidRequest`, `networkError`, …); after `device_revoked`, `deviceToken` fails with `attestationFailed` and that
 * reason until the app process restarts.
 */
public class TollgatePlugin : FlutterPlugin, MethodChannel.MethodCallHandler {
    private var channel: MethodChannel? = null
    private var context: Context? = null
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Main)

    override fun onAttachedToEngine(binding: FlutterPlugin.FlutterPluginBinding) {
        context = binding.getApplicationContext()
        channel = MethodChannel(binding.getBinaryMessenger(), CHANNEL).also { it.setMethodCallHandler(this) }
    }

    override fun onDetachedFromEngine(binding: FlutterPlugin.FlutterPluginBinding) {
        channel?.setMethodCallHandler(null)
        channel = null
        context = null
        scope.cancel()
    }

    override fun onMethodCall(call: MethodCall, result: MethodChannel.Result) {
        val context = context ?: return result.error("invalidRequest", "The Tollgate plugin is not attached to an engine.", mapOf("reason" to "not_attached"))
        when (call.method) {
            "getConfiguration" -> respond(result) { TollgateBridge.getConfiguration(context) }
            "configure" -> respond(result) {
                val appToken = call.argument<String>("appToken")
                    ?: throw IllegalArgumentException("configure needs {appToken}.")
                TollgateBridge.configure(context, appToken, call.argument<String>("gatewayUrl"), call.argument<String>("developmentToken"))
                null
            }
            "deviceToken" -> respond(result) { TollgateBridge.deviceToken(call.argument<Boolean>("forceRefresh") ?: false) }
            "reportError" -> respond(result) { TollgateBridge.reportError(call.argument<String>("deviceToken"), call.argument<String>("reason")) }
            "assertion" -> respond(result) {
                val digest = call.argument<String>("digest") ?: throw IllegalArgumentException("assertion needs {digest}.")
                TollgateBridge.assertion(digest)
            }
            "clear" -> respond(result) {
                TollgateBridge.clear()
                null
            }
            else -> result.notImplemented()
        }
    }

    /**
     * Runs [block] on the IO dispatcher (Keystore operations, the state file, the package manager and the network never
     * run on the main thread, which would stall frames) and answers on the main thread, as MethodChannel results must be.
     */
    private fun respond(result: MethodChannel.Result, block: suspend () -> Any?) {
        scope.launch {
            try {
                result.success(withContext(Dispatchers.IO) { block() })
            } catch (error: Throwable) {
                val failure = TollgateBridge.failure(error)
                result.error(failure.code, failure.message, mapOf("reason" to failure.reason))
            }
        }
    }

    private companion object {
        const val CHANNEL = "dev.tollgate/native"
    }
}
