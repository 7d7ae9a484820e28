// Gradle mirror of pom.xml, so that Android apps can depend on `project(":core")`. Maven stays the build of record
// for the tests: `mvn -q -B test` in this folder.
plugins {
    alias(libs.plugins.kotlin.jvm)
    `maven-publish`
}

group = "dev.tollgate"
version = "1.2.0"

kotlin {
    jvmToolchain(17)
    explicitApi()
}

tasks.withType<org.jetbrains.kotlin.gradle.tasks.KotlinCompile>().configureEach {
    kotlinOptions.jvmTarget = "11"
}

java {
    sourceCompatibility = JavaVersion.VERSION_11
    targetCompatibility = JavaVersion.VERSION_11
}

dependencies {
    api(libs.coroutines.core)
    api(libs.serialization.json)
    api(libs.okhttp)
    testImplementation("com.squareup.okhttp3:mockwebserver:4.12.0")
    testImplementation("com.openai:openai-java:4.101.0")
    testImplementation("org.junit.jupiter:junit-jupiter:5.10.2")
    testImplementation("org.jetbrains.kotlin:kotlin-test-junit5:1.9.24")
    testRuntimeOnly("org.junit.platform:junit-platform-launcher")
}

tasks.test {
    useJUnitPlatform()
    systemProperty("tollgate.conformance.dir", file("../../conformance").absolutePath)
}

// dev.tollgate:tollgate-core, a dependency of dev.tollgate:tollgate-android.
publishing {
    publications {
        register<MavenPublication>("release") {
            artifactId = "tollgate-core"
            from(components["java"])
        }
    }
}
