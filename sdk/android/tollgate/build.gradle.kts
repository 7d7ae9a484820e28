plugins {
    id("com.android.library")
    id("org.jetbrains.kotlin.android")
    `maven-publish`
}

group = "dev.tollgate"
version = "1.2.0"

android {
    namespace = "dev.tollgate"
    compileSdk = 34

    defaultConfig {
        // 24: Keystore key attestation with setAttestationChallenge; 26: java.util.Base64 and java.time, used by core.
        minSdk = 26
        consumerProguardFiles("consumer-rules.pro")
    }

    buildTypes {
        release {
            isMinifyEnabled = false
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_11
        targetCompatibility = JavaVersion.VERSION_11
    }

    publishing {
        singleVariant("release")
    }

    kotlinOptions {
        jvmTarget = "11"
        freeCompilerArgs += listOf("-Xexplicit-api=strict")
    }
}

dependencies {
    api(project(":core"))
    implementation("com.squareup.okhttp3:okhttp:4.12.0")
    // 1.4.0: the standard request API (StandardIntegrityManager) used as the default Play Integrity path.
    implementation("com.google.android.play:integrity:1.4.0")
    implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.8.1")
}

// dev.tollgate:tollgate-android, the artifact the Flutter and React Native plugins depend on
// (`./gradlew publishToMavenLocal` from sdk/android until it is published).
publishing {
    publications {
        register<MavenPublication>("release") {
            artifactId = "tollgate-android"
            afterEvaluate { from(components["release"]) }
        }
    }
}
