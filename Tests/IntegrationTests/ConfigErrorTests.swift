import Foundation
import Testing

/// A configuration that is wrong stops the real binary with exit 78 and a line that says where and what:
/// unknown names (with the nearest known one), in the file and in the environment, and wrong values.
@Suite("Configuration errors name the line and the setting", .threadPerTest, .timeLimit(.minutes(2)))
struct ConfigErrorTests {
    private func configFile(_ text: String) throws -> (path: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("fanoutd.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, directory)
    }

    @Test(arguments: [
        ("max_line: 4096\nmax_conections: 5\n", "line 2: unknown setting 'max_conections'; did you mean max_connections?"),
        ("history:\n  - subjects: [\"a.>\", \"b\"]\n    max_messages: 3\n",
         "line 2: history[0].subjects: expected one subject pattern in quotes, such as \"orders.>\" (one rule per pattern), found a list"),
        ("history:\n  - subjects: \"a.>\"\n    max_mesages: 3\n",
         "line 3: history[0]: unknown setting 'max_mesages'; did you mean max_messages?"),
        ("# a comment\nmax_line: a lot\n", "line 2: max_line: expected a whole number, found 'a lot'"),
        ("max_line: 10\n", "line 1: max_line: must be 64 ... 67108864"),
        ("cluster:\n  redis: [\"redis://127.0.0.1:1\"]\n  idle_expiry: soon\n",
         "line 3: cluster.idle_expiry: expected a number of seconds, found 'soon'"),
    ])
    func aBadFileIsRefusedAtStartWithItsLine(text: String, message: String) throws {
        let (path, directory) = try configFile(text)
        defer { try? FileManager.default.removeItem(at: directory) }
        for arguments in [["--config", path, "--check-config"], ["--config", path, "--listen", "127.0.0.1:0"]] {
            let result = try runDaemon(arguments)
            #expect(result.status == 78)
            #expect(result.stderr.contains("fanoutd: configuration: \(path): \(message)"), "\(result.stderr)")
        }
    }

    @Test func anUnknownEnvironmentVariableIsRefused() throws {
        let result = try runDaemon(["--check-config"], environment: ["FANOUTD_MAX_CONECTIONS": "5"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("unknown environment variable 'FANOUTD_MAX_CONECTIONS'; did you mean FANOUTD_MAX_CONNECTIONS?"),
                "\(result.stderr)")
        let wrong = try runDaemon(["--check-config"], environment: ["FANOUTD_MAX_LINE": "big"])
        #expect(wrong.status == 78)
        #expect(wrong.stderr.contains("FANOUTD_MAX_LINE: expected a whole number, found 'big'"), "\(wrong.stderr)")
    }

    @Test func aReloadWithAnUnknownSettingKeepsTheRunningConfiguration() throws {
        let (path, directory) = try configFile("max_subscriptions: 2\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try Daemon(arguments: ["--config", path])
        let client = try daemon.client()
        try "max_subscriptions: 5\nmax_subscriptons: 5\n".write(toFile: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let line = try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10)
        #expect(line.contains("\(path): line 2: unknown setting 'max_subscriptons'; did you mean max_subscriptions?"), "\(line)")
        #expect(try client.command("SUB a b") == "+OK 2")
        #expect(try client.command("SUB c").hasPrefix("-ERR limit"), "the running max_subscriptions (2) still holds")
    }

    /// The shipped file only turns the console on (history on disk is the installed copies', which any user
    /// could not write from a clone); every other value it shows is the built-in default.
    @Test func theShippedConfigIsTheDefaultsWithTheConsoleOn() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let shipped = try runDaemon(["--config", root.appendingPathComponent("config/fanoutd.yaml").path, "--check-config"])
        let defaults = try runDaemon(["--check-config", "--http-listen", "127.0.0.1:7412"])
        #expect(shipped.status == 0 && defaults.status == 0, "\(shipped.stderr) \(defaults.stderr)")
        #expect(shipped.stdout == defaults.stdout)
        #expect(shipped.stdout.contains("http_listen: 127.0.0.1:7412"))
        #expect(shipped.stdout.contains("history_dir: off"))
    }

    /// `fanoutd --check-config PATH` reads as it is written: the file may be given without --config.
    @Test func theConfigFileMayBeGivenWithoutTheOption() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let path = root.appendingPathComponent("config/fanoutd.yaml").path
        let plain = try runDaemon(["--check-config", path])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == (try runDaemon(["--config", path, "--check-config"])).stdout)
        let both = try runDaemon(["--config", path, path, "--check-config"])
        #expect(both.status == 64)
        #expect(both.stderr.contains("give the configuration file once"), "\(both.stderr)")
    }

    @Test func withNoConfigFileThereIsNoHTTPListener() throws {
        let result = try runDaemon(["--check-config", "--listen", "127.0.0.1:0"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("http_listen: off"))
    }

    /// fanoutd, fanout and INFO report one version (the Makefile reads it for the package and man pages).
    @Test func theDaemonTheClientAndInfoAgreeOnTheVersion() throws {
        let daemonVersion = try runDaemon(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let client = Process()
        client.executableURL = Daemon.binDirectory.appendingPathComponent("fanout")
        client.arguments = ["--version"]
        let pipe = Pipe()
        client.standardOutput = pipe
        try client.run()
        let clientVersion = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        client.waitUntilExit()
        #expect(clientVersion.trimmingCharacters(in: .whitespacesAndNewlines) == daemonVersion)
        let daemon = try Daemon()
        let info = try daemon.client().command("INFO")
        #expect(info.contains(" version=\(daemonVersion) "), "\(info)")
    }
}
