// swift-tools-version:6.0
//
// The Tollgate SDK for Apple platforms, from this repository's root so that SwiftPM resolves it by git URL and tag:
//
//     .package(url: "https://github.com/tollgate-dev/tollgate.git", from: "1.2.0")
//     .product(name: "TollgateSDK", package: "tollgate")
//
// The sources stay in sdk/ios. `swift test` (from this directory) runs the shared conformance vectors in
// sdk/conformance and the SDK's own tests, on macOS and on Linux: the platform-independent core builds everywhere;
// App Attest (DeviceCheck), the Keychain (Security), CryptoKit and URLSession's WebSocket are compiled only where they
// exist (#if canImport(...)). The module is TollgateSDK, as the CocoaPod: no type in it is named like the module.
import PackageDescription

let package = Package(
    name: "TollgateSDK",
    platforms: [
        .iOS(.v15),
        .macOS(.v12),
        .tvOS(.v15),
        .watchOS(.v9),
        .visionOS(.v1),
    ],
    products: [
        .library(name: "TollgateSDK", targets: ["TollgateSDK"]),
    ],
    targets: [
        .target(
            name: "TollgateSDK",
            path: "sdk/ios/Sources/TollgateSDK",
            // Apple's privacy manifest: the required-reason APIs the SDK uses (UserDefaults), no tracking.
            resources: [.copy("PrivacyInfo.xcprivacy")]
        ),
        .testTarget(
            name: "TollgateSDKTests",
            dependencies: ["TollgateSDK"],
            path: "sdk/ios/Tests/TollgateSDKTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
