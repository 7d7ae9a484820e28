// A minimal app using the Tollgate SDK by its coordinates (settings.gradle.kts names the repository). CI compiles its
// Kotlin against the real Android framework and the packaged SDK (sdk/android/typecheck/example); an APK needs the
// Android SDK: `gradle assembleDebug` in this folder.
plugins {
    alias(libs.plugins.android.application)
    alias(libs.plugins.kotlin.android)
}

android {
    namespace = "com.example.tollgate"
    compileSdk = 34
    defaultConfig {
        applicationId = "com.example.tollgate"
        // The same as the library's (sdk/android/tollgate/build.gradle.kts).
        minSdk = 26
        targetSdk = 34
        // The app token identifies the app; it is not a provider key. The gateway address is in AndroidManifest.xml.
        buildConfigField("String", "TOLLGATE_APP_TOKEN", "\"at_YOUR_APP_TOKEN\"")
        // Emulators only, debug builds only: a development token (npx tollgate dev-tokens create --app ID).
        buildConfigField("String", "TOLLGATE_DEV_TOKEN", "\"\"")
    }
    buildFeatures { buildConfig = true }
    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_11
        targetCompatibility = JavaVersion.VERSION_11
    }
    kotlinOptions { jvmTarget = "11" }
}

dependencies {
    implementation(libs.tollgate.android)
    implementation(libs.coroutines.android)
}
