// swift-tools-version:6.0
//
// Tollgate for iOS and macOS: call AI providers through a Tollgate gateway without shipping a provider key.
// `swift test` runs the shared conformance vectors in ../conformance (sdk/conformance/README.md), on macOS and on Linux:
// the platform-independent core builds everywhere; App Attest (DeviceCheck), the Keychain (Security), CryptoKit and the
// URLSession transport are compiled only where they exist (#if canImport(...)).
import PackageDescription

let package = Package(
    name: "Tollgate",
    platforms: [
        .iOS(.v15),
        .macOS(.v12),
        .tvOS(.v15),
        .watchOS(.v9),
        .visionOS(.v1),
    ],
    products: [
        .library(name: "Tollgate", targets: ["Tollgate"]),
    ],
    targets: [
        .target(
            name: "Tollgate",
            path: "Sources/Tollgate",
            // Apple's privacy manifest: the required-reason APIs the SDK uses (UserDefaults), no tracking.
            resources: [.copy("PrivacyInfo.xcprivacy")]
        ),
        .testTarget(
            name: "TollgateTests",
            dependencies: ["Tollgate"],
            path: "Tests/TollgateTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
