import Foundation
import Testing

/// A bounded run of `Benchmarks/scripts/crash_check.py` against the built `fanoutd`: rounds of load, kill -9,
/// damaged segments, rule reloads and a full disk, each followed by a restart and a check that every message
/// acknowledged under `always` is replayed and no (subject, epoch, seq) names two payloads. The full run
/// (hundreds of rounds) is in docs/testing.md; CI runs a few of each kind, with a fixed seed so that a failing
/// round can be run again alone (`FANOUT_CRASH_SEED` picks another).
@Suite("Crash-and-damage check of history on disk", .threadPerTest, .serialized, .timeLimit(.minutes(2)))
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
        let log = point.path + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        guard run(["/bin/mount", "-t", "tmpfs", "-o", "size=3145728", "tmpfs", point.path], output: log,
                  timeout: 10) == 0 else { return false }
        _ = run(["/bin/umount", point.path], output: log, timeout: 10)
        return true
    }()

    /// Runs `arguments` (the first a path) in a process group of its own, its stdout and stderr to the file
    /// `output`; returns its exit status, or nil if it was still running at `timeout` (then the whole group is
    /// sent SIGTERM, which the script answers by stopping its servers). posix_spawn and waitpid, not
    /// Foundation's Process, whose exit is seen on a run loop that a busy test run may not turn for minutes.
    static func run(_ arguments: [String], output: String, timeout: TimeInterval) -> Int32? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        guard posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ) == 0 else { return nil }
        let finished = DispatchSemaphore(value: 0)
        let stopped = CrossThreadFlag()
        let group = pid
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            if finished.wait(timeout: .now()) == .timedOut {
                stopped.set()
                kill(-group, SIGTERM)
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        finished.signal()
        if stopped.isSet || status & 0x7F != 0 { return nil }
        return (status >> 8) & 0xFF
    }

    /// The path of `name` on PATH, as a shell finds it.
    static func onPath(_ name: String) throws -> String {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/local/bin", "/usr/bin", "/bin"]
        guard let path = directories.map({ $0 + "/" + name }).first(where: FileManager.default.isExecutableFile)
        else { throw TestFailure("\(name) is not installed") }
        return path
    }

    /// Runs the script for `kinds`, at most `rounds` rounds and `seconds` seconds, and expects no violation.
    /// The wait is on a thread of its own: a test that held one of the few threads that run tests for a minute
    /// would hold up every test waiting for one.
    private func check(kinds: String, rounds: Int, seconds: Int) async throws {
        let arguments = [try Self.onPath("python3"), Self.script, "--fanoutd", Daemon.executable.path,
                         "--seed", Self.seed, "--kinds", kinds, "--rounds", String(rounds),
                         "--max-seconds", String(seconds)]
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("crash-check-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: log) }
        let status = await withCheckedContinuation { continuation in
            let timeout = TimeInterval(seconds + 40)
            Thread.detachNewThread {
                continuation.resume(returning: Self.run(arguments, output: log.path, timeout: timeout))
            }
        }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        let summary = output.split(separator: "\n").last { $0.hasSuffix(" failed") && $0.contains(" passed, ") } ?? ""
        let passed = Int(summary.split(separator: " ").first ?? "") ?? 0
        #expect(status == 0 && summary.hasSuffix(" passed, 0 failed") && passed > 0, "\(output)")
    }

    @Test func killDamageAndReloadsLoseNothingAcknowledgedAndNeverReuseASeq() async throws {
        try await check(kinds: "kill,flip,zero,truncate,reload,seam", rounds: 12, seconds: 45)
    }

    @Test(.enabled(if: tmpfsMounts, "needs root and a tmpfs it can mount (a real full disk); the other kinds ran"))
    func aFullDiskLosesNothingAcknowledgedAndNeverStopsTheServer() async throws {
        try await check(kinds: "enospc", rounds: 6, seconds: 25)
    }
}

/// A flag set once from one thread and read from another.
final class CrossThreadFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }

    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
