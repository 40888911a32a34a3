import Foundation
import Testing

/// A bounded run of `Benchmarks/scripts/crash_check.py` against the built `fanoutd`: rounds of load, kill -9,
/// damaged segments, rule reloads and a full disk, each followed by a restart and a check that every message
/// acknowledged under `always` is replayed and no (subject, epoch, seq) names two payloads. The full run
/// (hundreds of rounds) is in docs/testing.md; CI runs a few of each kind, with a fixed seed so that a failing
/// round can be run again alone (`FANOUT_CRASH_SEED` picks another).
@Suite("Crash-and-damage check of history on disk", .serialized, .timeLimit(.minutes(2)))
struct CrashCheckTests {
    static var script: String {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return root.appendingPathComponent("Benchmarks/scripts/crash_check.py").path
    }

    static var seed: String { ProcessInfo.processInfo.environment["FANOUT_CRASH_SEED"] ?? "1" }

    /// Whether a 3 MiB tmpfs can be mounted here (root, and a kernel and container that allow it): the full
    /// disk is a real one, never a simulation.
    static let tmpfsMounts: Bool = {
        guard getuid() == 0 else { return false }
        let point = FileManager.default.temporaryDirectory
            .appendingPathComponent("crash-check-probe-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: point, withIntermediateDirectories: true)) != nil else {
            return false
        }
        defer { try? FileManager.default.removeItem(at: point) }
        func run(_ arguments: [String]) -> Bool {
            guard let program = try? ExternalProgram("mount", arguments) else { return false }
            return program.finish(timeout: 10).status == 0
        }
        guard run(["-t", "tmpfs", "-o", "size=3145728", "tmpfs", point.path]) else { return false }
        _ = try? ExternalProgram("umount", [point.path]).finish(timeout: 10)
        return true
    }()

    /// Runs the script for `kinds`, at most `rounds` rounds and `seconds` seconds, and expects no violation.
    /// The wait is on a thread of its own: a test that held one of the few threads that run tests for a minute
    /// would hold up every test waiting for one.
    private func check(kinds: String, rounds: Int, seconds: Int) async throws {
        let program = try ExternalProgram("python3", [
            Self.script, "--fanoutd", Daemon.executable.path, "--seed", Self.seed, "--kinds", kinds,
            "--rounds", String(rounds), "--max-seconds", String(seconds),
        ])
        let result = await withCheckedContinuation { continuation in
            let timeout = TimeInterval(seconds + 40)
            Thread.detachNewThread { continuation.resume(returning: program.finish(timeout: timeout)) }
        }
        let output = (result.stdout + result.stderr).joined(separator: "\n")
        let summary = result.stdout.last { $0.hasSuffix(" failed") && $0.contains(" passed, ") } ?? ""
        let passed = Int(summary.split(separator: " ").first ?? "") ?? 0
        #expect(result.status == 0 && summary.hasSuffix(" passed, 0 failed") && passed > 0, "\(output)")
    }

    @Test func killDamageAndReloadsLoseNothingAcknowledgedAndNeverReuseASeq() async throws {
        try await check(kinds: "kill,flip,zero,truncate,reload,seam", rounds: 12, seconds: 45)
    }

    @Test(.enabled(if: tmpfsMounts, "needs root and a tmpfs it can mount (a real full disk); the other kinds ran"))
    func aFullDiskLosesNothingAcknowledgedAndNeverStopsTheServer() async throws {
        try await check(kinds: "enospc", rounds: 6, seconds: 25)
    }
}
