package dev.tollgate.reactnative

import com.facebook.react.ReactPackage
import com.facebook.react.bridge.NativeModule
import com.facebook.react.bridge.ReactApplicationContext
import com.facebook.react.uimanager.ViewManager

/**
 * Registers [TollgateNativeModule] (`TollgateNative`). Autolinking adds it to the app's package list; under the New
 * Architecture the module is served through the TurboModule interop layer, so no code generation is needed.
 */
public class TollgatePackage : ReactPackage {
    override fun createNativeModules(reactContext: ReactApplicationContext): List<NativeModule> = listOf(TollgateNativeModule(reactContext))

    override fun createViewManagers(reactContext: ReactApplicationContext): List<ViewManager<*, *>> = emptyList()
}
