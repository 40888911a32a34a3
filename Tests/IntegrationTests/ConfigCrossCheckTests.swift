import Foundation
import Testing

/// Settings that contradict each other are refused with the reason: at start (exit 78, the line of the
/// setting that was written), and on reload, where the running configuration is kept.
@Suite("Contradicting settings are refused", .threadPerTest, .timeLimit(.minutes(2)))
struct ConfigCrossCheckTests {
    private func configFile(_ text: String) throws -> (path: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-cross-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("fanoutd.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, directory)
    }

    @Test(arguments: [
        // The report: a 10 MB BPUB was answered +OK 1 and its subscriber dropped as a slow consumer.
        ("max_payload: 16777216\nmax_pending_bytes: 8388608\n",
         "line 1: max_payload/max_pending_bytes: max_payload (16777216) must be at most max_pending_bytes (8388608)"),
        ("max_pending_bytes: 1048576\nmax_payload: 1048576\n",
         "line 2: max_payload/max_pending_bytes: max_payload (1048576) must be at most max_pending_bytes (1048576)"),
        ("max_line: 1048576\nmax_pending_bytes: 1048576\nmax_payload: 4096\n",
         "line 2: max_pending_bytes: must be more than max_line + 512"),
        ("max_asks: 51\nmax_open_questions: 100\n",
         "line 1: max_asks/max_open_questions: max_asks (51) must be at most half of max_open_questions (100)"),
        // Out of range: refused before the cross-checks add to it, where it once trapped.
        ("max_pending_bytes: -9223372036854775808\n", "line 1: max_pending_bytes: must be 0 ... 1099511627776"),
        ("max_line: 9223372036854775807\n", "line 1: max_line: must be 64 ... 67108864"),
        ("write_timeout: 1e308\n", "line 1: write_timeout: expected a number of seconds (0 to 1000000000)"),
        // max_pending_bytes not set is sized to hold a set max_payload; here max_memory cannot hold four of it.
        ("max_memory: 67108864\nmax_payload: 16777216\n",
         "line 1: max_memory: must be 0 (off) or at least 4 × max_pending_bytes (16777728) (max_pending_bytes not set"),
        ("max_pending_bytes: 67108864\nmax_memory: 134217728\n",
         "line 2: max_memory: must be 0 (off) or at least 4 × max_pending_bytes"),
        ("max_pending_bytes: 8388608\nbackpressure_bytes: 8388608\n",
         "line 2: backpressure_bytes: must be 0 (off) or less than max_pending_bytes"),
    ])
    func aContradictionStopsTheStartWithItsReason(text: String, message: String) throws {
        let (path, directory) = try configFile(text)
        defer { try? FileManager.default.removeItem(at: directory) }
        let checked = try runDaemon(["--config", path, "--check-config"])
        #expect(checked.status == 78)
        #expect(checked.stderr.contains("fanoutd: configuration: \(path): \(message)"), "\(checked.stderr)")
        // Started for real: bounded, since a daemon that took the file would serve until killed.
        let daemon = try Daemon(arguments: ["--config", path, "--listen", "127.0.0.1:0"], listen: [],
                                waitForListening: false)
        #expect(daemon.waitForExit(timeout: 10) == 78)
        _ = try daemon.stderr.waitForLine(containing: "fanoutd: configuration: \(path): \(message)", timeout: 10)
    }

    /// A file that sets only a small max_memory (valid when max_pending_bytes defaulted to 8 MiB) still starts:
    /// max_pending_bytes, not set, is a quarter of it. One that lowers only max_pending_bytes starts with the
    /// max_payload that leaves room for its push.
    @Test func unsetLimitsFollowTheOnesTheyDependOn() throws {
        let (path, directory) = try configFile("max_memory: 33554432\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = try runDaemon(["--config", path, "--check-config"])
        #expect(small.status == 0, "\(small.stderr)")
        #expect(small.stdout.contains("max_pending_bytes: 8388608"), "\(small.stdout)")
        let defaults = try runDaemon(["--check-config"])
        #expect(defaults.stdout.contains("max_pending_bytes: 33554432"), "\(defaults.stdout)")
        #expect(defaults.stdout.contains("max_payload: 1048576"), "\(defaults.stdout)")
        try "max_pending_bytes: 100000\n".write(toFile: path, atomically: true, encoding: .utf8)
        let lowered = try runDaemon(["--config", path, "--check-config"])
        #expect(lowered.status == 0, "\(lowered.stderr)")
        #expect(lowered.stdout.contains("max_payload: 99488"), "\(lowered.stdout)")
        try "max_open_questions: 2\n".write(toFile: path, atomically: true, encoding: .utf8)
        let fewQuestions = try runDaemon(["--config", path, "--check-config"])
        #expect(fewQuestions.status == 0, "\(fewQuestions.stderr)")
        #expect(fewQuestions.stdout.contains("max_asks: 1"), "\(fewQuestions.stdout)")
        // A raised max_payload alone raises the unset max_pending_bytes to hold it.
        try "max_payload: 67108864\n".write(toFile: path, atomically: true, encoding: .utf8)
        let large = try runDaemon(["--config", path, "--check-config"])
        #expect(large.status == 0, "\(large.stderr)")
        #expect(large.stdout.contains("max_pending_bytes: 67109376"), "\(large.stdout)")
    }

    /// A reload that makes max_payload too long for the running max_pending_bytes is refused with the reason;
    /// the running max_payload still holds (a payload over it is refused, the connection usable).
    @Test func aContradictingReloadKeepsTheRunningConfiguration() throws {
        let (path, directory) = try configFile("max_payload: 1024\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try Daemon(arguments: ["--config", path])
        let client = try daemon.client()
        try "max_payload: 16777216\nmax_pending_bytes: 8388608\n".write(toFile: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let line = try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10)
        #expect(line.contains("\(path): line 1: max_payload/max_pending_bytes: max_payload (16777216) must be at most"),
                "\(line)")
        try client.send("BPUB a.b 2000\n" + String(repeating: "z", count: 2000) + "\n")
        #expect(try client.readLine().hasPrefix("-ERR too-long "), "max_payload=1024 still holds")
        #expect(try client.command("PING") == "+PONG")
    }
}
