import Foundation
import Testing

private let repositoryRoot: URL = {
    var root = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { root.deleteLastPathComponent() }
    return root
}()

private func tool(_ name: String) -> String? {
    ["/usr/bin/\(name)", "/bin/\(name)", "/usr/local/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// systemd-socket-activate holding `arguments`' listeners, to start fanoutd on the first connection, with its
/// log (fanoutd's stderr too) collected; listening when made. `stop()` kills it.
private final class SocketActivator {
    private let process = Process()
    let log = LineCollector()

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: tool("systemd-socket-activate")!)
        process.arguments = arguments + [Daemon.executable.path]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FANOUTD_") }
        let stderr = try CloexecPipe()
        process.standardError = stderr.write
        process.standardOutput = FileHandle.nullDevice
        log.attach(stderr.read)
        try process.run()
        try stderr.write.close()
        do {
            _ = try log.waitForLine(containing: "Listening on", timeout: 10)
        } catch {
            stop()
            throw error
        }
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// Runs a command to completion and returns its status and combined output.
private func runCommand(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = try CloexecPipe()
    process.standardOutput = output.write
    process.standardError = output.write
    try process.run()
    try output.write.close()
    let lines = LineCollector()
    lines.attach(output.read)
    lines.waitForEnd(timeout: 120)
    process.waitUntilExit()
    return (process.terminationStatus, lines.all.joined(separator: "\n"))
}

private func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A unix datagram socket standing in for systemd's NOTIFY_SOCKET.
private final class NotifySocket {
    let path: String
    let fd: Int32

    init(directory: URL) throws {
        path = directory.appendingPathComponent("notify.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else { throw TestFailure("bind \(path): errno \(errno)") }
    }

    deinit { close(fd) }

    /// The next datagram, or nil after the receive timeout.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Datagrams until one contains `state`.
    func waitFor(_ state: String) -> String? {
        while let message = receive() {
            if message.split(separator: "\n").contains(Substring(state)) { return message }
        }
        return nil
    }
}

/// An HTTP/1.0 GET over a plain socket: status line and body.
func httpGet(port: Int, path: String) throws -> (status: String, body: [String]) {
    let client = try LineClient(port: port)
    try client.send("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    let lines = try client.readUntilClosed().map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 }
    guard let blank = lines.firstIndex(of: "") else { throw TestFailure("no HTTP header end in \(lines)") }
    return (lines.first ?? "", Array(lines[(blank + 1)...]))
}

@Suite("Running under systemd", .threadPerTest, .timeLimit(.minutes(2)))
struct SystemdTests {
    @Test(.enabled(if: tool("systemd-analyze") != nil, "systemd-analyze is not installed (apt-get install systemd)"))
    func shippedUnitsVerifyAndScoreAtMostOne() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // verify checks that ExecStart exists: point it at the binary this build made.
        let unit = try String(contentsOf: repositoryRoot.appendingPathComponent("systemd/fanoutd.service"), encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/fanoutd", with: Daemon.executable.path)
        try unit.write(to: directory.appendingPathComponent("fanoutd.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("systemd/fanoutd.socket"),
                                         to: directory.appendingPathComponent("fanoutd.socket"))
        let analyze = tool("systemd-analyze")!
        let service = directory.appendingPathComponent("fanoutd.service").path
        let verify = try runCommand(analyze, ["verify", "--man=no", service, directory.appendingPathComponent("fanoutd.socket").path])
        #expect(verify.0 == 0, "\(verify.1)")
        #expect(verify.1.isEmpty, "verify is clean: \(verify.1)")
        let security = try runCommand(analyze, ["security", "--offline=true", service])
        let overall = try #require(security.1.split(separator: "\n").first { $0.contains("Overall exposure level") })
        let score = try #require(Double(overall.split(separator: ":").last!.split(separator: " ").first!))
        #expect(score <= 1.0, "\(overall)")
    }

    @Test func readinessAndStoppingAreNotified() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notify = try NotifySocket(directory: directory)
        let daemon = try Daemon(environment: ["NOTIFY_SOCKET": notify.path], waitForListening: false)
        let ready = try #require(notify.waitFor("READY=1"), "READY=1 arrives")
        #expect(ready.contains("STATUS=clients=0"))
        // READY=1 is sent only once listening: the port must accept right now.
        let line = try daemon.stderr.waitForLine(containing: "listening on ", timeout: 1)
        let port = try #require(Int(line.split(separator: ":").last!.prefix { $0.isNumber }))
        let client = try LineClient(port: port)
        #expect(try client.readLine().hasPrefix("+HELLO fanout/1 "))
        daemon.signal(SIGTERM)
        #expect(notify.waitFor("STOPPING=1") != nil)
        #expect(daemon.waitForExit(timeout: 15) == 0)
    }

    @Test func watchdogKeepAlivesAtHalfTheInterval() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notify = try NotifySocket(directory: directory)
        let daemon = try Daemon(environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
        _ = daemon
        #expect(notify.waitFor("READY=1") != nil)
        let started = Date()
        #expect(notify.waitFor("WATCHDOG=1") != nil)
        #expect(notify.waitFor("WATCHDOG=1") != nil)
        #expect(Date().timeIntervalSince(started) < 2, "keep-alives come every 0.2 s")
    }

    @Test(.enabled(if: tool("systemd-socket-activate") != nil, "systemd-socket-activate is not installed"))
    func servesOnSocketsHandedOverBySystemd() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freePort()
        let unixPath = directory.appendingPathComponent("fanoutd.sock").path
        let activator = try SocketActivator(["-l", "127.0.0.1:\(port)", "-l", unixPath])
        defer { activator.stop() }
        let log = activator.log
        // The first connection starts fanoutd, which serves on the inherited sockets.
        let tcp = try LineClient(port: port)
        #expect(try tcp.readLine().hasPrefix("+HELLO fanout/1 "))
        #expect(try tcp.command("SUB activated") == "+OK 1")
        let activated = try log.waitForLine(containing: "(socket activation)", timeout: 10)
        #expect(activated.contains("listening on"))
        let unix = try LineClient(unixPath: unixPath)
        #expect(try unix.readLine().hasPrefix("+HELLO fanout/1 "))
        #expect(try unix.command("PUB activated over-unix") == "+OK 1")
        #expect(try tcp.readLine() == "MSG activated 1 over-unix")
        #expect(try unix.command("CLIENTS").contains("addr=unix:"))
    }

    /// A socket named "http" in LISTEN_FDNAMES serves http_listen's routes; the others the protocol.
    @Test(.enabled(if: tool("systemd-socket-activate") != nil, "systemd-socket-activate is not installed"))
    func servesHTTPOnTheSocketNamedHTTP() throws {
        let port = try freePort()
        let httpPort = try freePort()
        let activator = try SocketActivator(["-l", "127.0.0.1:\(port)", "-l", "127.0.0.1:\(httpPort)",
                                             "--fdname=protocol:http"])
        defer { activator.stop() }
        let log = activator.log
        let tcp = try LineClient(port: port)
        #expect(try tcp.readLine().hasPrefix("+HELLO fanout/1 "))
        _ = try log.waitForLine(containing: "serving HTTP on http://127.0.0.1:\(httpPort)/", timeout: 10)
        #expect(try httpGet(port: httpPort, path: "/healthz").body == ["ok"])
    }

    /// A socket named "mqtt" serves MQTT in place of mqtt_listen, which is not bound beside it.
    @Test(.enabled(if: tool("systemd-socket-activate") != nil, "systemd-socket-activate is not installed"))
    func servesMQTTOnTheSocketNamedMQTT() throws {
        let port = try freePort()
        let mqttPort = try freePort()
        let activator = try SocketActivator(["-l", "127.0.0.1:\(port)", "-l", "127.0.0.1:\(mqttPort)",
                                             "--fdname=protocol:mqtt", "-E", "FANOUTD_MQTT_LISTEN=127.0.0.1:0"])
        defer { activator.stop() }
        let log = activator.log
        let mqtt = try LineClient(port: mqttPort)
        try mqtt.send(MQTTListenerTests.connect())
        #expect(try mqtt.readBytes(4) == MQTTListenerTests.accepted)
        _ = try log.waitForLine(containing: "listening on 127.0.0.1:\(mqttPort) (mqtt, socket activation)", timeout: 10)
        let tcp = try LineClient(port: port)
        #expect(try tcp.readLine().hasPrefix("+HELLO fanout/1 "))
        #expect(infoFields(try tcp.command("INFO"))["mqtt_connections"] == "1")
        #expect(log.all.filter { $0.contains("(mqtt") }.count == 1,
                "mqtt_listen is not bound beside the handed-over socket")
    }

    @Test func reloadAppliesNewLimitsWithoutDroppingAnyone() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configPath = directory.appendingPathComponent("fanoutd.yaml")
        let firstPort = try freePort()
        try "listen: [\"127.0.0.1:\(firstPort)\"]\nmax_line: 1024\n".write(to: configPath, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", configPath.path], listen: [])
        #expect(daemon.port == firstPort)
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB keep") == "+OK 1")
        let publisher = try daemon.client()
        #expect(try publisher.command("PUB keep " + String(repeating: "a", count: 500)) == "+OK 1")
        _ = try subscriber.readLine()

        let secondPort = try freePort()
        try "listen: [\"127.0.0.1:\(firstPort)\", \"127.0.0.1:\(secondPort)\"]\nmax_line: 100\n"
            .write(to: configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        #expect(try subscriber.command("PING still-here") == "+PONG still-here", "the subscriber survived")
        #expect(try publisher.command("PUB keep " + String(repeating: "b", count: 500)).hasPrefix("-ERR too-long "))
        #expect(try publisher.command("PUB keep short") == "+OK 1", "the new limit applies, the subscription stays")
        #expect(try subscriber.readLine() == "MSG keep 2 short")
        let viaNewListener = try LineClient(port: secondPort)
        #expect(try viaNewListener.readLine().hasPrefix("+HELLO"), "a new listen address is opened live")

        try "max_line: [not, a, number]\n".write(to: configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let rejected = try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10)
        #expect(rejected.contains("max_line"))
        #expect(try publisher.command("PUB keep " + String(repeating: "c", count: 500)).hasPrefix("-ERR too-long "),
                "the running configuration stays")
        #expect(try subscriber.command("PING") == "+PONG")
    }

    @Test func metricsAreServedInPrometheusFormat() throws {
        let daemon = try Daemon(environment: ["FANOUTD_METRICS_LISTEN": "127.0.0.1:0"])
        let line = try daemon.stderr.waitForLine(containing: "serving HTTP on http://", timeout: 10)
        let address = line.components(separatedBy: "http://").last!.components(separatedBy: "/").first!
        let port = try #require(Int(address.split(separator: ":").last!))

        let health = try httpGet(port: port, path: "/healthz")
        #expect(health.status.hasPrefix("HTTP/1.") && health.status.contains(" 200 "))
        #expect(health.body == ["ok"])
        #expect(try httpGet(port: port, path: "/nope").status.contains(" 404 "))

        func sample(_ name: String, in body: [String]) -> Double? {
            body.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last!) }
        }
        let before = try httpGet(port: port, path: "/metrics")
        #expect(before.status.contains(" 200 "))
        let sampleLine = #/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.eE+-]+$/#
        for row in before.body where !row.isEmpty && !row.hasPrefix("#") {
            #expect(row.wholeMatch(of: sampleLine) != nil, "not Prometheus text: \(row)")
        }
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB m") == "+OK 1")
        let publisher = try daemon.client()
        for _ in 0..<5 { #expect(try publisher.command("PUB m x") == "+OK 1") }
        for _ in 0..<5 { _ = try subscriber.readLine() }
        let after = try httpGet(port: port, path: "/metrics").body
        #expect(sample("fanout_published_total", in: after) == (sample("fanout_published_total", in: before.body) ?? 0) + 5)
        #expect(sample("fanout_delivered_total", in: after) == 5)
        #expect(sample("fanout_connections", in: after) == 2)
        #expect(sample("fanout_subscriptions", in: after) == 1)
        #expect((sample("fanout_bytes_in_total", in: after) ?? 0) > 0)
        #expect(after.contains { $0.hasPrefix("fanout_publish_to_write_seconds_bucket") })
        #expect(sample("fanout_publish_to_write_seconds_count", in: after) == 5, "each delivery's write was timed")
        for name in ["fanout_history_subjects", "fanout_history_messages", "fanout_history_bytes",
                     "fanout_history_evicted_total", "fanout_memory_bound_drops_total", "fanout_replayed_total"] {
            #expect(sample(name, in: after) == 0, "\(name) is served")
        }
    }

    @Test func logLinesCarrySyslogPrioritiesUnderJournald() throws {
        let daemon = try Daemon(environment: ["JOURNAL_STREAM": "8:12345"])
        let line = try daemon.stderr.waitForLine(containing: "listening on", timeout: 10)
        #expect(line.hasPrefix("<5>listening on 127.0.0.1:"), "notice is <5>, with no timestamp")
        let plain = try Daemon()
        let plainLine = try plain.stderr.waitForLine(containing: "listening on", timeout: 10)
        #expect(plainLine.wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z notice listening on .*/#) != nil, "\(plainLine)")
    }

    @Test func makeInstallLaysOutTheExpectedFiles() throws {
        let destination = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: destination) }
        let configDirectory = destination.appendingPathComponent("etc/fanout")
        try FileManager.default.createDirectory(at: configDirectory, withIntermediateDirectories: true)
        try "# mine\n".write(to: configDirectory.appendingPathComponent("fanoutd.yaml"), atomically: true, encoding: .utf8)
        let make = try #require(tool("make"))
        let result = try runCommand(make, ["-C", repositoryRoot.path, "install", "DESTDIR=\(destination.path)",
                                           "PREFIX=/opt/fanout", "BIN_DIR=\(Daemon.binDirectory.path)"])
        #expect(result.0 == 0, "\(result.1)")
        for path in ["opt/fanout/bin/fanoutd", "opt/fanout/bin/fanout", "opt/fanout/lib/systemd/system/fanoutd.service",
                     "opt/fanout/lib/systemd/system/fanoutd.socket", "opt/fanout/share/man/man8/fanoutd.8",
                     "etc/fanout/fanoutd.yaml"] {
            #expect(FileManager.default.fileExists(atPath: destination.appendingPathComponent(path).path), "\(path)")
        }
        let unit = try String(contentsOf: destination.appendingPathComponent("opt/fanout/lib/systemd/system/fanoutd.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/opt/fanout/bin/fanoutd --config /etc/fanout/fanoutd.yaml"))
        #expect(try String(contentsOf: configDirectory.appendingPathComponent("fanoutd.yaml"), encoding: .utf8) == "# mine\n",
                "an existing configuration is not overwritten")
    }
}
