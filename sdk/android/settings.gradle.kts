// Gradle build of the Android SDK: `core` (pure JVM, also built by Maven: core/pom.xml) and `tollgate` (Android library).
// Needs the Android SDK (ANDROID_HOME) and Google's Maven repository for Play Integrity. Versions: gradle/libs.versions.toml.
// The example app is a build of its own (example/), consuming dev.tollgate:tollgate-android by its coordinates.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}

dependencyResolutionManagement {
    // Repositories are declared here only; no module of this build declares its own.
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "tollgate-android"
include(":core", ":tollgate")
