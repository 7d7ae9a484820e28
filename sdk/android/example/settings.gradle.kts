// The example app, a Gradle build of its own that consumes the SDK as an app does: by its coordinates,
// dev.tollgate:tollgate-android, from the Maven repository `npm run sdk:package` writes (dist/sdk/maven), with the
// versions from the SDK's catalog.
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
        // Built by `npm run sdk:package` at the repository root; an app outside this repository points here, or at
        // wherever it hosts the dist/sdk/maven folder.
        maven { url = uri("../../../dist/sdk/maven") }
    }
    versionCatalogs {
        create("libs") { from(files("../gradle/libs.versions.toml")) }
    }
}

rootProject.name = "tollgate-example"
