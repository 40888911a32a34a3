import Foundation
import Testing

/// Integration suites block (daemons, sockets, child processes): each runs on threads of its own
/// (`.threadPerTest`, Tests/Support/ThreadPerTest.swift), or two of them hold the two-thread concurrency pool
/// of a 2-core machine and every other test, time-limit checks included, waits behind them.
@Suite("Every integration suite runs its tests on threads of their own")
struct BlockingSuitesTests {
    @Test func everyIntegrationSuiteCarriesTheTrait() throws {
        let folder = ShippedFilesTests.root.appendingPathComponent("Tests/IntegrationTests")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        var suites = 0
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasPrefix("@Suite") {
                suites += 1
                #expect(line.contains(".threadPerTest"), "\(file): \(line) lacks .threadPerTest")
            }
        }
        #expect(suites > 50, "found the integration suites (\(suites))")
    }
}
