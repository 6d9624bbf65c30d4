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
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // The local HTTP API and web UI. No traits: we need neither swift-configuration nor full Foundation there.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
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
                // SQLite's C API, for the one call GRDB does not wrap: the writer's WAL hook (WALCheckpointer).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Pure: the rules of a sync session as a state machine (inputs in, actions out), and the per-peer budget.
        .target(name: "ContinuumSession", dependencies: ["ContinuumCore", "ContinuumWire"], swiftSettings: strict),
        // SwiftNIO sessions over TLS 1.3 pinned to Ed25519 identities: anti-entropy, gossip, photos, dialling.
        .target(
            name: "ContinuumSync",
            dependencies: [
                "ContinuumCore",
                "ContinuumWire",
                "ContinuumSession",
                "ContinuumMedia",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // libavahi-client, seen from Swift. Only ContinuumDiscovery imports it (.ci/run checks).
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client", providers: [.apt(["libavahi-client-dev"])]),
        // LAN discovery: publishes and browses `_continuum._tcp` through avahi-daemon, behind `PeerDiscovery`.
        .target(
            name: "ContinuumDiscovery",
            dependencies: ["CAvahi", "ContinuumCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // libvips, seen from Swift. Only ContinuumMedia imports it (.ci/run checks).
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        // gexiv2 (the C API over exiv2), seen from Swift: removes a photo's location without re-encoding it. Only
        // ContinuumMedia imports it (.ci/run checks).
        .systemLibrary(name: "CGExiv2", pkgConfig: "gexiv2", providers: [.apt(["libgexiv2-dev"])]),
        // libgeonames, the cities of GeoNames as Debian packages them: where a photo was taken, by name, offline. Only
        // ContinuumMedia imports it (.ci/run checks).
        .systemLibrary(name: "CGeonames", pkgConfig: "geonames", providers: [.apt(["libgeonames-dev"])]),
        // Photos through libvips: full-decode checks, EXIF metadata, thumbnails made once and cached on disk; and
        // through gexiv2: location metadata removed before a photo is shared.
        .target(
            name: "ContinuumMedia",
            dependencies: [
                "CVips", "CGExiv2", "CGeonames", "ContinuumCore", "ContinuumStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The node: store, sync and lifecycle wired together; the lock and the control socket; what both front ends
        // share: each user action written once (`NodeActions`), and the JSON they print.
        .target(
            name: "ContinuumNode",
            dependencies: [
                "ContinuumCore",
                "ContinuumDiscovery",
                "ContinuumMedia",
                "ContinuumStore",
                "ContinuumWire",
                "ContinuumSync",
                "ContinuumSession",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The local HTTP API (Hummingbird) and the web UI's static files; Docs/API.md, Resources/openapi.json.
        .target(
            name: "ContinuumHTTP",
            dependencies: [
                "ContinuumCore",
                "ContinuumDiscovery",
                "ContinuumMedia",
                "ContinuumNode",
                "ContinuumStore",
                "ContinuumSync",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                // `--api-tls`: the API over TLS with the node's own P-256 certificate (browsers take no Ed25519).
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            resources: [.copy("Web"), .copy("Resources")],
            swiftSettings: strict
        ),
        // Reproducible signed test data, shared by the tests and the benchmark.
        .target(name: "ContinuumTestSupport", dependencies: ["ContinuumCore"], swiftSettings: strict),
        // Pure: frames and messages of sync protocol v1. No I/O, so that a fuzzer can drive it.
        .target(
            name: "ContinuumWire",
            dependencies: ["ContinuumCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "continuum-node",
            dependencies: [
                "ContinuumCore",
                "ContinuumDiscovery",
                "ContinuumHTTP",
                "ContinuumMedia",
                "ContinuumStore",
                "ContinuumSync",
                "ContinuumNode",
                "ContinuumWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "continuum-bench",
            dependencies: [
                "ContinuumCore",
                "ContinuumStore",
                "ContinuumTestSupport",
                "ContinuumSync",
                "ContinuumWire",
                "ContinuumNode",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                // `push`'s baseline: a durable SQLite commit on the same disk, as the store makes them.
                .product(name: "GRDB", package: "GRDB.swift"),
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
            dependencies: [
                "ContinuumStore", "ContinuumCore", "ContinuumTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ContinuumWireTests",
            dependencies: ["ContinuumWire", "ContinuumCore", "ContinuumTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncTests",
            dependencies: [
                "ContinuumCore", "ContinuumStore", "ContinuumWire", "ContinuumTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // A reader of a node's database from outside it (ErasureTests).
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        // The sync layer's pure parts (what peers lacked, the outbox), with no sockets and no processes.
        .testTarget(
            name: "ContinuumSyncTests",
            dependencies: [
                "ContinuumSync", "ContinuumSession", "ContinuumCore", "ContinuumWire",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The session state machine and the peer budget: every message in every state, and two machines back to back.
        .testTarget(
            name: "ContinuumSessionTests",
            dependencies: ["ContinuumSession", "ContinuumCore", "ContinuumWire"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ContinuumDiscoveryTests",
            dependencies: [
                "ContinuumDiscovery", "ContinuumCore", "ContinuumWire", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ContinuumHTTPTests",
            dependencies: [
                "ContinuumHTTP", "ContinuumNode", "ContinuumStore", "ContinuumCore", "ContinuumMedia",
                "ContinuumTestSupport", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The user actions on a real store (the photo checks and thumbnails included), the JSON shapes, the control
        // socket's messages.
        .testTarget(
            name: "ContinuumNodeTests",
            dependencies: [
                "ContinuumNode", "ContinuumCore", "ContinuumDiscovery", "ContinuumMedia", "ContinuumStore",
                "ContinuumSync", "ContinuumTestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ContinuumMediaTests",
            dependencies: [
                "ContinuumMedia", "ContinuumCore", "ContinuumStore", "ContinuumTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "ContinuumCore", "ContinuumStore", "ContinuumTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
    ]
)
