// swift-tools-version:5.9
//
// Tollgate for iOS and macOS: call AI providers through a Tollgate gateway without shipping a provider key.
// `swift test` runs the shared conformance vectors in ../conformance (sdk/conformance/README.md).
import PackageDescription

let package = Package(
    name: "Tollgate",
    platforms: [
        .iOS(.v15),
        .macOS(.v12),
    ],
    products: [
        .library(name: "Tollgate", targets: ["Tollgate"]),
    ],
    targets: [
        .target(
            name: "Tollgate",
            path: "Sources/Tollgate",
            linkerSettings: [
                .linkedFramework("DeviceCheck"),
                .linkedFramework("Security"),
            ]
        ),
        .testTarget(
            name: "TollgateTests",
            dependencies: ["Tollgate"],
            path: "Tests/TollgateTests"
        ),
    ]
)
