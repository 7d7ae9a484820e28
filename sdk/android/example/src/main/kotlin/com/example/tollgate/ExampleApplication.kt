package com.example.tollgate

import android.app.Application
import dev.tollgate.Tollgate
import dev.tollgate.TollgateConfiguration

/** Initializes Tollgate at app start, before any screen can make a request. The gateway address is in the manifest. */
class ExampleApplication : Application() {
    override fun onCreate() {
        super.onCreate()
        val developmentToken = if (BuildConfig.DEBUG) BuildConfig.TOLLGATE_DEV_TOKEN.ifEmpty { null } else null
        if (developmentToken == null) {
            // Release builds (and debug builds on a real phone): key attestation, then Play Integrity.
            Tollgate.initialize(this, BuildConfig.TOLLGATE_APP_TOKEN)
        } else {
            // Emulators: a development token, in debug builds only.
            Tollgate.initialize(this, BuildConfig.TOLLGATE_APP_TOKEN, TollgateConfiguration(developmentToken = developmentToken))
        }
    }
}
