// swift-tools-version: 6.1
// Micro-benchmarks, in a package of their own so that neither the daemon's build nor its tests pay for the
// benchmark framework. Run from this directory: `swift package benchmark` (see README, "Performance").
import PackageDescription

let package = Package(
    name: "fanout-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "fanout", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "FanoutMicro",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "FanoutProtocol", package: "fanout"),
                .product(name: "FanoutMulticast", package: "fanout"),
                .product(name: "FanoutSubjects", package: "fanout"),
                .product(name: "FanoutEngine", package: "fanout"),
            ],
            path: "Benchmarks/FanoutMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
