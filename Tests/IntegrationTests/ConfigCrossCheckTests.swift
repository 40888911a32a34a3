import Foundation
import Testing

/// Settings that contradict each other are refused with the reason: at start (exit 78, the line of the
/// setting that was written), and on reload, where the running configuration is kept.
@Suite("Contradicting settings are refused", .timeLimit(.minutes(2)))
struct ConfigCrossCheckTests {
    private func configFile(_ text: String) throws -> (path: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-cross-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("fanoutd.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, directory)
    }

    @Test(arguments: [
        // The report: a 10 MB BPUB was answered +OK 1 and its subscriber dropped as a slow consumer.
        ("max_payload: 16777216\nmax_pending_bytes: 8388608\n",
         "line 1: max_payload/max_pending_bytes: max_payload (16777216) must be at most max_pending_bytes (8388608) - 512"),
        ("max_pending_bytes: 1048576\n",
         "line 1: max_payload/max_pending_bytes: max_payload (1048576) must be at most max_pending_bytes (1048576) - 512"),
        ("max_line: 1048576\nmax_pending_bytes: 1048576\nmax_payload: 4096\n",
         "line 2: max_pending_bytes: must be more than max_line + 512"),
        ("max_asks: 200\nmax_open_questions: 100\n",
         "line 1: max_asks/max_open_questions: max_asks (200) must not be more than max_open_questions (100)"),
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
        let daemon = try Daemon(arguments: ["--config", path, "--listen", "127.0.0.1:0"], listen: [], waitForListening: false)
        #expect(daemon.waitForExit(timeout: 10) == 78)
        _ = try daemon.stderr.waitForLine(containing: "fanoutd: configuration: \(path): \(message)", timeout: 10)
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
