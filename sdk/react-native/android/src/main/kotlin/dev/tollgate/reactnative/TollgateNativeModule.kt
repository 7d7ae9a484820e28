package dev.tollgate.reactnative

import android.util.Base64
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

    /** HTTP over OkHttp for the TypeScript core ([NativeHttp]): `{url, method, headerPairs, bodyBase64}` → `{id, status, headerPairs}`. */
    @ReactMethod
    public fun httpStart(options: ReadableMap, promise: Promise) {
        http(promise) {
            val url = options.string("url") ?: throw IllegalArgumentException("httpStart needs {url}.")
            val pairs = ArrayList<String>()
            val array = if (options.hasKey("headerPairs") && !options.isNull("headerPairs")) options.getArray("headerPairs") else null
            if (array != null) {
                for (index in 0 until array.size()) {
                    val value: String? = array.getString(index)
                    pairs.add(value ?: "")
                }
            }
            val body = options.string("bodyBase64")?.let { Base64.decode(it, Base64.NO_WRAP) }
            val (id, status, headerPairs) = NativeHttp.start(url, options.string("method") ?: "GET", pairs, body)
            val map = Arguments.createMap()
            map.putString("id", id)
            map.putInt("status", status)
            val headers = Arguments.createArray()
            for (value in headerPairs) headers.pushString(value)
            map.putArray("headerPairs", headers)
            map
        }
    }

    /** `{id}` → `{chunkBase64}`: the next bytes of the body, null at its end. */
    @ReactMethod
    public fun httpRead(options: ReadableMap, promise: Promise) {
        http(promise) {
            val id = options.string("id") ?: throw IllegalArgumentException("httpRead needs {id}.")
            val chunk = NativeHttp.read(id)
            val map = Arguments.createMap()
            if (chunk == null) map.putNull("chunkBase64") else map.putString("chunkBase64", Base64.encodeToString(chunk, Base64.NO_WRAP))
            map
        }
    }

    /** `{id}` → null: closes the connection. */
    @ReactMethod
    public fun httpCancel(options: ReadableMap, promise: Promise) {
        http(promise) {
            options.string("id")?.let(NativeHttp::cancel)
            null
        }
    }

    /** Runs blocking HTTP work on the IO dispatcher; a failure is a networkError (no response, or a cut body). */
    private fun http(promise: Promise, block: () -> WritableMap?) {
        scope.launch(Dispatchers.IO) {
            try {
                promise.resolve(block())
            } catch (error: Throwable) {
                val userInfo = Arguments.createMap()
                userInfo.putString("reason", if (error is IllegalArgumentException) "bad_arguments" else "unreachable")
                promise.reject(if (error is IllegalArgumentException) "invalidRequest" else "networkError", error.message ?: error.toString(), userInfo)
            }
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
