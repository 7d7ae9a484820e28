plugins {
    alias(libs.plugins.android.library)
    alias(libs.plugins.kotlin.android)
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
    api(libs.okhttp)
    // 1.4.0: the standard request API (StandardIntegrityManager) used as the default Play Integrity path.
    implementation(libs.play.integrity)
    implementation(libs.coroutines.android)
}

// dev.tollgate:tollgate-android. `npm run sdk:package` builds the same artifact (AAR and POM) into dist/sdk/maven
// without Gradle; `./gradlew publish` with a repository of your own publishes this one.
publishing {
    publications {
        register<MavenPublication>("release") {
            artifactId = "tollgate-android"
            afterEvaluate { from(components["release"]) }
        }
    }
}
