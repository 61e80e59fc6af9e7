// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "PlistSync",
    products: [
        .executable(name: "plistsync", targets: ["plistsync"])
    ],
    targets: [
        // C libraries from Debian packages.
        .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),

        // Pure layers: no sockets, no files.
        .target(name: "SyncProtocol"),
        .target(name: "SyncCore", dependencies: ["SyncProtocol"]),
        .target(name: "PlistFormat", dependencies: ["SyncProtocol"]),
        .target(name: "AgentDecisions", dependencies: ["SyncCore", "SyncProtocol", "PlistFormat"]),

        // I/O layers.
        .target(name: "EventLoop", dependencies: ["CLibUV"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
        .target(name: "SQLiteStore", dependencies: ["SyncCore", "SQLiteKit"]),
        .target(name: "PostgresKit", dependencies: ["CLibPQ"]),
        .target(name: "PostgresStore", dependencies: ["SyncCore", "PostgresKit", "EventLoop"]),
        .target(name: "CShims"),
        .target(name: "HTTPKit", dependencies: ["CHTTPParser"]),
        .target(name: "CTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        .target(name: "TLSKit", dependencies: ["CTLS", "EventLoop"]),
        .target(name: "SyncClient", dependencies: ["SyncCore", "SyncProtocol", "EventLoop", "TLSKit"]),
        .target(name: "AgentKit", dependencies: ["AgentDecisions", "SyncCore", "PlistFormat", "SQLiteKit", "EventLoop", "CShims", "TLSKit", "SyncClient"]),
        .target(name: "ServerKit", dependencies: ["SyncCore", "EventLoop", "COpenSSL", "TLSKit", "HTTPKit"]),
        // The HTTP front: the API and the web console on the server's core.
        .target(
            name: "ServerHTTP", dependencies: ["ServerKit", "SyncCore", "SyncProtocol", "EventLoop", "HTTPKit", "TLSKit"],
            // The web console's files, compiled into the binary (no files to install beside it).
            resources: [.embedInCode("Console")]),
        // The test kit (issue 32): stand-ins the test targets share.
        .target(name: "PlistSyncTesting", dependencies: ["SyncCore", "SyncProtocol", "AgentKit", "ServerKit", "ServerHTTP", "EventLoop"]),
        .target(name: "LoadGenerator", dependencies: ["EventLoop", "SyncProtocol", "SyncCore", "PlistFormat", "TLSKit", "SyncClient"]),
        // The command line's subcommands, a library so tests can run them inside their process.
        .target(name: "PlistSyncCommands", dependencies: ["ServerKit", "ServerHTTP", "AgentKit", "SQLiteStore", "PostgresStore", "PostgresKit", "PlistFormat", "SyncCore", "SyncProtocol", "EventLoop", "LoadGenerator", "TLSKit"]),
        .executableTarget(name: "plistsync", dependencies: ["PlistSyncCommands"]),

        .testTarget(name: "SyncProtocolTests", dependencies: ["SyncProtocol"]),
        .testTarget(name: "SyncCoreTests", dependencies: ["SyncCore", "PlistSyncTesting"]),
        .testTarget(name: "ServerKitTests", dependencies: ["ServerKit", "ServerHTTP", "SyncCore", "SyncProtocol", "HTTPKit"]),
        .testTarget(name: "PlistFormatTests", dependencies: ["PlistFormat"]),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop"]),
        .testTarget(name: "AgentDecisionsTests", dependencies: ["AgentDecisions", "SyncCore", "SyncProtocol", "PlistFormat", "PlistSyncTesting"]),
        .testTarget(name: "AgentKitTests", dependencies: ["AgentKit", "PlistFormat", "SyncProtocol"]),
        .testTarget(name: "SimulationTests", dependencies: ["AgentKit", "AgentDecisions", "ServerKit", "SQLiteStore", "EventLoop", "SyncCore", "SyncProtocol", "PlistFormat", "PlistSyncTesting"]),
        .testTarget(name: "LoadGeneratorTests", dependencies: ["LoadGenerator"]),
        .testTarget(name: "HTTPKitTests", dependencies: ["HTTPKit"]),
        .testTarget(name: "IntegrationTests", dependencies: ["plistsync", "PlistSyncCommands", "SyncProtocol", "PlistFormat", "TLSKit", "ServerKit", "ServerHTTP", "SQLiteStore", "PostgresStore", "EventLoop", "PlistSyncTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
