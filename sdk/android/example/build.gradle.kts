// A minimal app using the Tollgate SDK (not built in this repository's CI: it needs the Android SDK).
plugins {
    id("com.android.application")
    kotlin("android")
}

android {
    namespace = "com.example.tollgate"
    compileSdk = 34
    defaultConfig {
        applicationId = "com.example.tollgate"
        minSdk = 24
        targetSdk = 34
        // The gateway and the app token identify the app; neither is a provider key.
        buildConfigField("String", "TOLLGATE_GATEWAY_URL", "\"https://gateway.example.com\"")
        buildConfigField("String", "TOLLGATE_APP_TOKEN", "\"at_YOUR_APP_TOKEN\"")
        // Emulators only, debug builds only: a development token (npx tollgate dev-tokens create --app ID).
        buildConfigField("String", "TOLLGATE_DEV_TOKEN", "\"\"")
    }
    buildFeatures { buildConfig = true }
}

dependencies {
    implementation(project(":tollgate"))
    implementation("androidx.lifecycle:lifecycle-runtime-ktx:2.8.4")
    implementation("androidx.activity:activity-ktx:1.9.1")
}
