// swift-tools-version: 6.2
import PackageDescription

/// Our own code is built in Swift 6 language mode, with strict concurrency, and every warning is an error.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "continuum-node",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "continuum-node", targets: ["continuum-node"]),
        .executable(name: "continuum-bench", targets: ["continuum-bench"]),
        .library(name: "ContinuumCore", targets: ["ContinuumCore"]),
        .library(name: "ContinuumStore", targets: ["ContinuumStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // Pure: model, identity keys, canonical encoding, signatures, vector clocks, image headers. No I/O.
        .target(
            name: "ContinuumCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // SQLite through GRDB: migrations, the record log, derived views, search; photo files; the data directory.
        .target(
            name: "ContinuumStore",
            dependencies: [
                "ContinuumCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Reproducible signed test data, shared by the tests and the benchmark.
        .target(name: "ContinuumTestSupport", dependencies: ["ContinuumCore"], swiftSettings: strict),
        .executableTarget(
            name: "continuum-node",
            dependencies: [
                "ContinuumCore",
                "ContinuumStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "continuum-bench",
            dependencies: [
                "ContinuumCore",
                "ContinuumStore",
                "ContinuumTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ContinuumCoreTests",
            dependencies: ["ContinuumCore", "ContinuumTestSupport"],
            resources: [.copy("Resources")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ContinuumStoreTests",
            dependencies: ["ContinuumStore", "ContinuumCore", "ContinuumTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CLITests",
            dependencies: ["ContinuumCore", "ContinuumStore"],
            swiftSettings: strict
        ),
    ]
)
