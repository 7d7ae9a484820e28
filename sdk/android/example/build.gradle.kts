// A minimal app using the Tollgate SDK. CI compiles its Kotlin against the real Android framework (sdk/android/compile);
// the Gradle build needs the Android SDK.
plugins {
    id("com.android.application")
    kotlin("android")
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
}

dependencies {
    implementation(project(":tollgate"))
    implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.8.1")
}
