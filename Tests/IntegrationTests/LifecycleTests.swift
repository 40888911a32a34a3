import Foundation
import Testing

/// Runs the built `fanoutd` to completion with `arguments`, returning its exit status and output.
func runDaemon(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = Daemon.executable
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FANOUTD_") }
    env.merge(environment) { $1 }
    process.environment = env
    let out = try CloexecPipe(), err = try CloexecPipe()
    process.standardOutput = out.write
    process.standardError = err.write
    try process.run()
    try out.write.close()
    try err.write.close()
    let collectedOut = LineCollector(), collectedErr = LineCollector()
    collectedOut.attach(out.read)
    collectedErr.attach(err.read)
    collectedOut.waitForEnd(timeout: 30)
    collectedErr.waitForEnd(timeout: 30)
    let stdout = Data((collectedOut.all.joined(separator: "\n") + "\n").utf8)
    let stderr = Data(collectedErr.all.joined(separator: "\n").utf8)
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

@Suite("Lifecycle and configuration", .threadPerTest, .timeLimit(.minutes(3)))
struct LifecycleTests {
    @Test func sigtermTellsClientsAndExitsZero() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        #expect(try client.command("SUB a") == "+OK 1")
        daemon.signal(SIGTERM)
        #expect(try client.readLine().hasPrefix("-ERR shutting-down "))
        #expect(try client.readLineOrEOF() == nil)
        #expect(daemon.waitForExit(timeout: 15) == 0)
        #expect(throws: (any Error).self, "no longer accepting") { try LineClient(port: daemon.port) }
    }

    @Test func sigintDuringAStalledFlushStillExitsWithinTheGracePeriod() throws {
        let daemon = try Daemon(environment: ["FANOUTD_SHUTDOWN_GRACE": "1"])
        let stalled = try LineClient(port: daemon.port, receiveBuffer: 4096)
        try stalled.sendLine("SUB s")
        let publisher = try daemon.client()
        try eventually("subscribed") { try publisher.command("PUB s x") == "+OK 1" }
        try publisher.send(String(repeating: "PUB s " + String(repeating: "w", count: 1000) + "\n", count: 5000))
        for _ in 0..<5000 { _ = try publisher.readLine() }
        let started = Date()
        daemon.signal(SIGINT)
        #expect(daemon.waitForExit(timeout: 15) == 0)
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func versionAndHelp() throws {
        let version = try runDaemon(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
        let help = try runDaemon(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--listen") && help.stdout.contains("--check-config"))
    }

    @Test func checkConfigShowsTheDefaults() throws {
        let result = try runDaemon(["--check-config"])
        #expect(result.status == 0)
        for line in ["listen: 127.0.0.1:7411", "max_line: 65536", "max_connections: 10000",
                     "max_subscriptions: 10000", "max_pending_bytes: 33554432", "send_buffer_bytes: 524288",
                     "write_timeout: 30",
                     "idle_timeout: 0 (off)", "shutdown_grace: 5"] {
            #expect(result.stdout.contains(line), "\(line)")
        }
    }

    @Test func checkConfigReadsAFileAndTheEnvironmentOverridesIt() throws {
        let path = try fixture("minimal.yaml")
        let result = try runDaemon(["--config", path, "--check-config"], environment: ["FANOUTD_MAX_LINE": "2048"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("server_name: fixture-host"))
        #expect(result.stdout.contains("write_timeout: 2.5"))
        #expect(result.stdout.contains("max_line: 2048"))
    }

    @Test func theShippedConfigIsValid() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let result = try runDaemon(["--config", root.appendingPathComponent("config/fanoutd.yaml").path, "--check-config"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("listen: 127.0.0.1:7411"))
    }

    @Test func badConfigurationIsRefusedClearly() throws {
        let wrongType = try runDaemon(["--config", try fixture("wrong-type.yaml"), "--check-config"])
        #expect(wrongType.status == 78)
        #expect(wrongType.stderr.contains("max_line"))
        let missing = try runDaemon(["--config", "/nonexistent/fanoutd.yaml"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("cannot read config file"))
        let outOfRange = try runDaemon(["--check-config"], environment: ["FANOUTD_MAX_CONNECTIONS": "0"])
        #expect(outOfRange.status == 78)
        #expect(outOfRange.stderr.contains("max_connections"))
        let badAddress = try runDaemon(["--listen", "nonsense"])
        #expect(badAddress.status == 78)
        #expect(badAddress.stderr.hasPrefix("fanoutd: configuration: listen: address 'nonsense'"))
    }

    @Test func portsOutsideSixteenBitsAreRefusedNamingTheSetting() throws {
        let tooHigh = try runDaemon(["--listen", "127.0.0.1:99999"])
        #expect(tooHigh.status == 78)
        #expect(tooHigh.stderr.contains("listen: address '127.0.0.1:99999': the port must be a number from 0 to 65535"),
                "\(tooHigh.stderr)")
        let checked = try runDaemon(["--check-config"], environment: ["FANOUTD_METRICS_LISTEN": "127.0.0.1:70000"])
        #expect(checked.status == 78, "--check-config refuses it too")
        #expect(checked.stderr.contains("metrics_listen: address '127.0.0.1:70000'"), "\(checked.stderr)")
        let signed = try runDaemon(["--check-config", "--listen", "127.0.0.1:+80"])
        #expect(signed.status == 78)
    }

    @Test func aUnixSocketWhereAServerAnswersIsInUseNotTakenOver() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-unix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let first = try Daemon(listen: ["unix:\(path)"])
        let second = try runDaemon(["--listen", "unix:\(path)"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("another server answers there"), "\(second.stderr)")
        let client = try LineClient(unixPath: path)
        #expect(try client.readLine().hasPrefix("+HELLO fanout/1 "), "the first server still answers on its path")
        first.signal(SIGTERM)
        #expect(first.waitForExit(timeout: 15) == 0)
    }

    @Test func theYAMLFormsOfTheDocumentationAreRead() throws {
        let result = try runDaemon(["--config", try fixture("yaml-forms.yaml"), "--check-config"])
        #expect(result.status == 0, "\(result.stderr)")
        for line in ["listen: 127.0.0.1:0, 127.0.0.1:0", "server_name: it's-a-host", "max_line: 4096",
                     "write_timeout: 1.5", "admin_commands: CLIENTS, INFO", "http_listen: off",
                     "users: alice, bob"] {
            #expect(result.stdout.contains(line), "\(line)")
        }
    }

    /// YAML the reader does not take is refused with its line, never read some other way.
    @Test(arguments: [
        ("max_line: &anchor 5\n", "line 1: '&'"), ("server_name: |\n  text\n", "line 1: '|'"),
        ("users: {a: b}\n", "line 1: {...} maps"), ("max_line: 5\nmax_line: 6\n", "line 2: 'max_line' is given twice"),
        ("listen:\n\t- a\n", "line 2: tabs"), ("listen: [a, b\n", "line 1: the '[' list is not closed"),
        ("server_name: a: b\n", "line 1: a ': ' inside a value"),
    ])
    func unsupportedYAMLIsRefusedWithItsLine(text: String, message: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bad.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", path, "--check-config"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("cannot read config file \(path): \(message)"), "\(result.stderr)")
    }

    @Test func addressInUseIsAClearError() throws {
        let daemon = try Daemon()
        let second = try runDaemon(["--listen", "127.0.0.1:\(daemon.port)"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("address already in use"), "\(second.stderr)")
    }

    @Test func listensOnSeveralAddressesIncludingIPv6() throws {
        let hasIPv6 = FileManager.default.fileExists(atPath: "/proc/net/if_inet6")
        let daemon = try Daemon(listen: hasIPv6 ? ["127.0.0.1:0", "[::1]:0"] : ["127.0.0.1:0", "127.0.0.1:0"])
        #expect(daemon.ports.count == 2)
        let first = try LineClient(port: daemon.ports[0])
        let second = try LineClient(host: hasIPv6 ? "::1" : "127.0.0.1", port: daemon.ports[1])
        _ = try first.readLine()
        _ = try second.readLine()
        #expect(try second.command("SUB v6") == "+OK 1")
        #expect(try first.command("PUB v6 across") == "+OK 1")
        #expect(try second.readLine() == "MSG v6 1 across")
    }
}
