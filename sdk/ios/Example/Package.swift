// swift-tools-version:6.0
//
// The example app, consuming TollgateSDK as an app does: through the repository root's Package.swift (by path here;
// an app writes .package(url: "https://github.com/tollgate-dev/tollgate.git", from: "1.2.0")). Open this file in
// Xcode and run the TollgateExample scheme on an iPhone simulator, or `swift run` on a Mac.
import PackageDescription

let package = Package(
    name: "TollgateExample",
    platforms: [.iOS(.v15), .macOS(.v12)],
    dependencies: [
        .package(name: "TollgateSDK", path: "../../.."),
    ],
    targets: [
        .executableTarget(
            name: "TollgateExample",
            dependencies: [.product(name: "TollgateSDK", package: "TollgateSDK")],
            path: "Sources/TollgateExample"
        ),
    ],
    swiftLanguageModes: [.v6]
)
