// swift-tools-version: 6.1
import PackageDescription

// Release builds of the publish path's modules and of the load generator skip Swift's run-time exclusivity
// checks: on the publish path they were about a tenth of the server's user time (each access to a class's
// stored property is registered and looked up; in the event loop's write queue alone, a tenth of scenario A's
// instructions in callgrind). Debug builds and the tests keep them, so a violation still traps there; the
// compile-time checks stay on everywhere.
let uncheckedExclusivityInRelease: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

// The daemon links the Swift runtime and libraries statically, with lld and packed relative relocations
// (glibc 2.36 or later): the shared Swift libraries cost each process about 3 MB of resident pages for symbol
// lookups and relocations, and the relocation table another 0.9 MB. FoundationEssentials (which
// swift-argument-parser and swift-metrics import) names its own two libraries, which a static link must list.
let daemonLinkerSettings: [LinkerSetting] = [
    .unsafeFlags([
        "-static-stdlib", "-lFoundationEssentials", "-l_FoundationCollections", "-l_FoundationCShims",
        "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    ]),
]

let package = Package(
    name: "fanout",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fanoutd", targets: ["fanoutd"]),
        .executable(name: "fanout", targets: ["fanout"]),
        .library(name: "FanoutClient", targets: ["FanoutClient"]),
        .library(name: "FanoutMulticast", targets: ["FanoutMulticast"]),
        .library(name: "FanoutProtocol", targets: ["FanoutProtocol"]),
        // For the micro-benchmarks package under Benchmarks/, which measures the subject index and the engine
        // seam in process.
        .library(name: "FanoutSubjects", targets: ["FanoutSubjects"]),
        .library(name: "FanoutEngine", targets: ["FanoutEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    ],
    targets: [
        // The package's four C modules: three are headers only, each imported by one Swift module, and CCRC32C
        // is the one C function Swift cannot write. This one: libevent's headers, nothing else.
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent",
            providers: [.apt(["libevent-dev"])]
        ),
        // hiredis (Debian's libhiredis-dev) and its libevent adapter, for the Redis engine: headers only.
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        // The one Swift module that imports CLibevent: loop, listener, buffered sockets, timers, signals.
        .target(name: "FanoutEventLoop", dependencies: ["CLibevent"], swiftSettings: uncheckedExclusivityInRelease),
        // The in-process multicast-delegate core: weak, deduplicated member sets. No networking.
        .target(name: "FanoutMulticast", swiftSettings: uncheckedExclusivityInRelease),
        // The wire protocol: line framing, command parsing, subjects, reply encoding, and the text every layer
        // writes (decimal digits, base64, JSON strings). No I/O.
        .target(name: "FanoutProtocol", swiftSettings: uncheckedExclusivityInRelease),
        // Collections whose worst case stays small at millions of entries (no stop-the-loop rehash).
        .target(name: "FanoutCollections", swiftSettings: uncheckedExclusivityInRelease),
        // Subject matching: the subject index (exact map, wildcard trie, weak member sets) and the pattern
        // list that sweeps and listings walk in slices. No server, no I/O: the micro-benchmarks use it alone.
        .target(
            name: "FanoutSubjects",
            dependencies: [
                "FanoutMulticast", "FanoutProtocol", "FanoutCollections",
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: uncheckedExclusivityInRelease
        ),
        // The processor's CRC-32C instruction, for history records' checksums: C because Swift cannot name it.
        .target(name: "CCRC32C"),
        // History on disk: segment files of checksummed records, the start-up recovery that reads and repairs
        // them, and the write-behind thread. The only file I/O of history; no loop, no engine.
        .target(
            name: "FanoutHistoryDisk",
            dependencies: ["CCRC32C", .product(name: "Logging", package: "swift-log")],
            swiftSettings: uncheckedExclusivityInRelease
        ),
        // Engines: where each subject's messages get their order (and, with history, are kept). The in-memory
        // engine is the embedded default. No I/O of its own. Its `Unretained` is the one reference the layers
        // above read without a retain.
        .target(
            name: "FanoutEngine",
            dependencies: [
                "FanoutProtocol", "FanoutCollections", "FanoutHistoryDisk",
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: uncheckedExclusivityInRelease
        ),
        // A Redis client on the loop: a command and a subscription connection per shard, reconnection,
        // heartbeats. The only Swift module that imports CHiredis.
        .target(
            name: "FanoutRedis",
            dependencies: [
                "CHiredis", "FanoutEventLoop", "FanoutProtocol",
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: uncheckedExclusivityInRelease
        ),
        // The engine shared by several nodes: numbering, order and history in Redis shards (cluster: section).
        .target(
            name: "FanoutRedisEngine",
            dependencies: ["FanoutRedis", "FanoutEngine", "FanoutProtocol", "FanoutEventLoop"],
            swiftSettings: uncheckedExclusivityInRelease
        ),
        // libcrypto's headers for application tokens, nothing else: shim.h loads the library on first use through
        // a function table (as CLibevent's does for TLS), so a server without token keys never maps libcrypto.
        .systemLibrary(
            name: "CCrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The one Swift module that imports CCrypto: HMAC-SHA2, constant-time comparison, RSA and P-256 public keys
        // read from DER and the signatures they check.
        .target(name: "FanoutCrypto", dependencies: ["CCrypto"]),
        // Application tokens (JWT): keys (an HMAC secret, a PEM key, a JWKS), each pinning its algorithm family;
        // the signature, the standard claims and the `fanout` grant. No I/O.
        .target(name: "FanoutTokens", dependencies: ["FanoutProtocol", "FanoutCrypto"]),
        // The HTTP front's pure parts: request parser, responses, WebSocket handshake and framing. No I/O.
        .target(name: "FanoutHTTP", dependencies: ["FanoutProtocol"]),
        // MQTT 3.1.1's pure layer: packets, the incremental decoder and the encoder, topic <-> subject mapping.
        // No I/O, no Foundation.
        .target(name: "FanoutMQTT", dependencies: ["FanoutProtocol"]),
        // The operator's console at GET /: console.html, .css, .js and the JavaScript client's browser build
        // (copied in by clients/js/scripts/embed-console.mjs) as real files, embedded at build time, and the page
        // put together from them on first use. No I/O.
        .target(
            name: "FanoutConsole",
            resources: [
                .embedInCode("Page/console.html"), .embedInCode("Page/console.css"), .embedInCode("Page/console.js"),
                .embedInCode("Page/fanout.browser.js"),
            ]
        ),
        // The server core: connections, subscriptions (over FanoutSubjects' index), fan-out, limits, lifecycle,
        // and the HTTP front, which serves FanoutConsole's page.
        .target(
            name: "FanoutServer",
            dependencies: [
                "FanoutEventLoop", "FanoutMulticast", "FanoutProtocol", "FanoutEngine", "FanoutHTTP", "FanoutCollections",
                "FanoutRedis", "FanoutRedisEngine", "FanoutSubjects", "FanoutHistoryDisk", "FanoutConsole",
                "FanoutTokens", "FanoutMQTT",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: uncheckedExclusivityInRelease
        ),
        // The configuration file's YAML subset, the catalogue of settings and their checks. No I/O.
        .target(name: "FanoutConfig"),
        .executableTarget(
            name: "fanoutd",
            dependencies: [
                "FanoutServer", "FanoutConfig", "FanoutProtocol", "FanoutHistoryDisk",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: daemonLinkerSettings
        ),
        // The client library: connect, subscribe, publish, ping, reconnect; on the same loop wrapper.
        .target(
            name: "FanoutClient",
            dependencies: [
                "FanoutEventLoop", "FanoutProtocol",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // The load generator: raw delivery sinks and publish pumps for fanoutd and redis-server, one core's worth.
        .target(
            name: "FanoutBench",
            dependencies: [
                "FanoutClient", "FanoutEventLoop", "FanoutProtocol", "FanoutMQTT",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            // The load generator has one core and must outrun the servers it measures.
            swiftSettings: uncheckedExclusivityInRelease
        ),
        .executableTarget(
            name: "fanout",
            dependencies: [
                "FanoutClient", "FanoutEventLoop", "FanoutBench", "FanoutProtocol", "FanoutMQTT",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Without loop-invariant code motion: on this module's commands the optimizer's LICM ran for more than
            // ten minutes of a release build (quadratic in a function's loops and accesses); the hot loops of the
            // load generator live in FanoutBench, which keeps it.
            swiftSettings: uncheckedExclusivityInRelease + [
                .unsafeFlags(["-Xllvm", "-sil-disable-pass=loop-invariant-code-motion"], .when(configuration: .release)),
            ]
        ),
        // Helpers shared by the test targets: a seeded random generator, malloc's size of an object, a
        // redis-server started for a test.
        .target(name: "FanoutTestSupport", path: "Tests/Support"),
        .testTarget(name: "FanoutClientTests", dependencies: ["FanoutClient", "FanoutProtocol", "FanoutTestSupport"]),
        .testTarget(name: "FanoutMulticastTests", dependencies: ["FanoutMulticast"]),
        .testTarget(name: "FanoutProtocolTests", dependencies: ["FanoutProtocol", "FanoutTestSupport"]),
        // The server core's parts, many on a Server built in the test process (Harness/: peers over socket pairs
        // through the server's accept path, the loop stepped until an event, no listener and no sleep).
        .testTarget(
            name: "FanoutServerTests",
            dependencies: [
                "FanoutEventLoop", "FanoutServer", "FanoutProtocol", "FanoutTestSupport", "FanoutMQTT",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FanoutSubjectsTests",
            dependencies: ["FanoutSubjects", "FanoutMulticast", "FanoutProtocol", "FanoutTestSupport"]
        ),
        .testTarget(name: "FanoutHTTPTests", dependencies: ["FanoutHTTP", "FanoutProtocol", "FanoutTestSupport"]),
        .testTarget(name: "FanoutMQTTTests", dependencies: ["FanoutMQTT", "FanoutProtocol", "FanoutTestSupport"]),
        .testTarget(name: "FanoutEngineTests", dependencies: ["FanoutEngine", "FanoutProtocol", "FanoutHistoryDisk"]),
        .testTarget(name: "FanoutRedisTests", dependencies: ["FanoutRedis", "FanoutRedisEngine", "FanoutEngine", "FanoutEventLoop", "FanoutTestSupport"]),
        .testTarget(name: "FanoutConfigTests", dependencies: ["FanoutConfig"]),
        .testTarget(
            name: "FanoutTokensTests",
            dependencies: ["FanoutTokens", "FanoutCrypto", "FanoutProtocol", "FanoutTestSupport"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "FanoutConsoleTests", dependencies: ["FanoutConsole"]),
        // Tests of the repository rather than of a module: file lengths, the shipped config and reference
        // against the catalogue of settings, the protocol document against the shared contract.
        .testTarget(name: "RepositoryTests", dependencies: ["FanoutConfig"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["FanoutProtocol", "FanoutTestSupport"],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
