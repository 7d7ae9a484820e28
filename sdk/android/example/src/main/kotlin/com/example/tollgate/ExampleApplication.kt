package com.example.tollgate

import android.app.Application
import dev.tollgate.Tollgate
import dev.tollgate.TollgateConfiguration

/** Initializes Tollgate at app start, before any screen can make a request. */
class ExampleApplication : Application() {
    override fun onCreate() {
        super.onCreate()
        Tollgate.initialize(
            this,
            BuildConfig.TOLLGATE_APP_TOKEN,
            TollgateConfiguration(
                gatewayUrl = BuildConfig.TOLLGATE_GATEWAY_URL,
                // Emulators: a development token in debug builds only; release builds attest with Play Integrity or key attestation.
                developmentToken = if (BuildConfig.DEBUG) BuildConfig.TOLLGATE_DEV_TOKEN.ifEmpty { null } else null,
            ),
        )
    }
}
