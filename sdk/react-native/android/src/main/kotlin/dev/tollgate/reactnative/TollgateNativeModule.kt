package dev.tollgate.reactnative

import com.facebook.react.bridge.Arguments
import com.facebook.react.bridge.Promise
import com.facebook.react.bridge.ReactApplicationContext
import com.facebook.react.bridge.ReactContextBaseJavaModule
import com.facebook.react.bridge.ReactMethod
import com.facebook.react.bridge.ReadableMap
import com.facebook.react.bridge.WritableMap
import com.facebook.react.module.annotations.ReactModule
import dev.tollgate.TollgateBridge
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch

/**
 * The native module `TollgateNative` for the TypeScript SDK: the device-token lifecycle of the Tollgate Android SDK
 * (key attestation, signature refresh, Play Integrity standard requests, Keystore-backed persistence, revocation),
 * reached through [TollgateBridge]. This module makes no key and keeps no token of its own. Every method is async and
 * settles its promise:
 *
 * | method | argument | resolves with |
 * |---|---|---|
 * | `getConfiguration()` | — | `{gatewayUrl: string \| null}` (AndroidManifest meta-data `dev.tollgate.GATEWAY_URL`) |
 * | `configure(options)` | `{appToken, gatewayUrl, developmentToken}` | null |
 * | `deviceToken(options)` | `{forceRefresh: boolean}` | `{deviceToken, expiresAtMs: number, deviceId}` |
 * | `reportError(options)` | `{deviceToken, reason}` | `{action: "stop" \| "refresh" \| "attest" \| "assert" \| "none"}` |
 * | `assertion(options)` | `{digest: base64 of 32 bytes}` | `{assertion: string \| null}` |
 * | `clear()` | — | null |
 *
 * A failure rejects with `code` = the SDK error kind (`attestationFailed`, `invalidRequest`, `networkError`, …), the
 * message, and `userInfo` `{reason}`; after `device_revoked`, `deviceToken` rejects with `attestationFailed` and that
 * reason until the app process restarts.
 */
@ReactModule(name = TollgateNativeModule.NAME)
public class TollgateNativeModule(reactContext: ReactApplicationContext) : ReactContextBaseJavaModule(reactContext) {
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    override fun getName(): String = NAME

    override fun invalidate() {
        scope.cancel()
        super.invalidate()
    }

    @ReactMethod
    public fun getConfiguration(promise: Promise) {
        settle(promise) { TollgateBridge.getConfiguration(reactApplicationContext) }
    }

    @ReactMethod
    public fun configure(options: ReadableMap, promise: Promise) {
        settle(promise) {
            val appToken = options.string("appToken") ?: throw IllegalArgumentException("configure needs {appToken}.")
            TollgateBridge.configure(reactApplicationContext, appToken, options.string("gatewayUrl"), options.string("developmentToken"))
            null
        }
    }

    @ReactMethod
    public fun deviceToken(options: ReadableMap, promise: Promise) {
        settle(promise) {
            val forceRefresh = options.hasKey("forceRefresh") && !options.isNull("forceRefresh") && options.getBoolean("forceRefresh")
            TollgateBridge.deviceToken(forceRefresh)
        }
    }

    @ReactMethod
    public fun reportError(options: ReadableMap, promise: Promise) {
        settle(promise) { TollgateBridge.reportError(options.string("deviceToken"), options.string("reason")) }
    }

    @ReactMethod
    public fun assertion(options: ReadableMap, promise: Promise) {
        settle(promise) {
            val digest = options.string("digest") ?: throw IllegalArgumentException("assertion needs {digest}.")
            TollgateBridge.assertion(digest)
        }
    }

    @ReactMethod
    public fun clear(promise: Promise) {
        settle(promise) {
            TollgateBridge.clear()
            null
        }
    }

    /** Runs [block] off the JS thread and settles [promise] with its map (or null), or rejects with the SDK error kind. */
    private fun settle(promise: Promise, block: suspend () -> Map<String, Any?>?) {
        scope.launch {
            try {
                promise.resolve(block()?.let(::toWritable))
            } catch (error: Throwable) {
                val failure = TollgateBridge.failure(error)
                val userInfo = Arguments.createMap()
                if (failure.reason != null) userInfo.putString("reason", failure.reason) else userInfo.putNull("reason")
                promise.reject(failure.code, failure.message, userInfo)
            }
        }
    }

    private fun toWritable(values: Map<String, Any?>): WritableMap {
        val map = Arguments.createMap()
        for ((key, value) in values) {
            when (value) {
                null -> map.putNull(key)
                is String -> map.putString(key, value)
                is Boolean -> map.putBoolean(key, value)
                // JavaScript numbers are doubles: expiresAtMs (unix ms) is exact up to 2^53.
                is Number -> map.putDouble(key, value.toDouble())
                else -> map.putString(key, value.toString())
            }
        }
        return map
    }

    private fun ReadableMap.string(key: String): String? = if (hasKey(key) && !isNull(key)) getString(key) else null

    public companion object {
        /** The module name JavaScript looks up (`NativeModules.TollgateNative`, `TurboModuleRegistry.get('TollgateNative')`). */
        public const val NAME: String = "TollgateNative"
    }
}
