// Gradle build of the Android SDK: `core` (pure JVM, also built by Maven: core/pom.xml) and `tollgate` (Android library).
// Needs the Android SDK (ANDROID_HOME) and Google's Maven repository for Play Integrity.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}

dependencyResolutionManagement {
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "tollgate-android"
include(":core", ":tollgate", ":example")
