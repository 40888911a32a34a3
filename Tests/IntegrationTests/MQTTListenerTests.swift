import Foundation
import Testing

/// MQTT's listeners as an operator sees them: the settings that turn them on (and the ones `--check-config`
/// refuses), the addresses they log and serve, a reload that moves them, and what INFO, CLIENTS and `/metrics`
/// report about MQTT connections.
@Suite("MQTT listeners", .threadPerTest, .timeLimit(.minutes(3)))
struct MQTTListenerTests {
    /// CONNECT, MQTT 3.1.1, clean session, keep-alive 60 s, with a client id of under 100 bytes.
    static func connect(_ clientID: String = "client") -> [UInt8] {
        let id = Array(clientID.utf8)
        return [0x10, UInt8(12 + id.count), 0, 4] + Array("MQTT".utf8) + [4, 0x02, 0, 60, 0, UInt8(id.count)] + id
    }
    /// CONNACK: session present 0, accepted.
    static let accepted: [UInt8] = [0x20, 2, 0, 0]

    private func configFile(_ text: String) throws -> (path: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-mqtt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("fanoutd.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, directory)
    }

    @Test func theMQTTListenerIsLoggedAndAnswersCONNECT() throws {
        let (daemon, mqttPort) = try Daemon.withMQTT()
        #expect(mqttPort != daemon.port)
        _ = try daemon.stderr.waitForLine(containing: "listening on 127.0.0.1:\(mqttPort) (mqtt)", timeout: 10)
        let mqtt = try LineClient(port: mqttPort)
        try mqtt.send(Self.connect())
        #expect(try mqtt.readBytes(4) == Self.accepted)
        let admin = try daemon.client()
        let info = infoFields(try admin.command("INFO"))
        #expect(info["mqtt_connections"] == "1")
        #expect(try #require(Int(info["mqtt_packets_in"] ?? "")) >= 1)
        #expect(try #require(Int(info["mqtt_packets_out"] ?? "")) >= 1)
        let clients = try admin.command("CLIENTS")
        #expect(clients.contains("transport=mqtt"), "\(clients)")
        mqtt.close()
        // The count falls once the server has seen the close: asked again until it has (bounded).
        let deadline = Date().addingTimeInterval(10)
        var connections = info["mqtt_connections"]
        while connections != "0" && Date() < deadline {
            _ = try admin.command("PING")
            connections = infoFields(try admin.command("INFO"))["mqtt_connections"]
        }
        #expect(connections == "0")
    }

    @Test func aServerWithoutMQTTReportsZeros() throws {
        let daemon = try Daemon()
        let info = infoFields(try daemon.client().command("INFO"))
        for name in ["mqtt_connections", "mqtt_sessions", "mqtt_retained", "mqtt_packets_in", "mqtt_packets_out",
                     "mqtt_unmappable", "mqtt_wills", "mqtt_session_messages_dropped"] {
            #expect(info[name] == "0", "\(name)")
        }
        #expect(!daemon.stderr.all.contains { $0.contains("(mqtt") }, "no MQTT listener is bound unless asked")
    }

    @Test func metricsCarryTheMQTTSeries() throws {
        let (daemon, mqttPort) = try Daemon.withMQTT(environment: ["FANOUTD_HTTP_LISTEN": "127.0.0.1:0"])
        let line = try daemon.stderr.waitForLine(containing: "serving HTTP on http://", timeout: 10)
        let address = line.components(separatedBy: "http://").last!.components(separatedBy: "/").first!
        let httpPort = try #require(Int(address.split(separator: ":").last!))
        let mqtt = try LineClient(port: mqttPort)
        try mqtt.send(Self.connect())
        #expect(try mqtt.readBytes(4) == Self.accepted)
        let body = try httpGet(port: httpPort, path: "/metrics").body
        func sample(_ series: String) -> Double? {
            body.first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last!) }
        }
        #expect(sample("fanout_mqtt_connections") == 1, "\(body.filter { $0.contains("mqtt") })")
        #expect(sample(#"fanout_mqtt_packets_total{direction="in",type="connect"}"#) == 1)
        #expect(sample(#"fanout_mqtt_packets_total{direction="out",type="connack"}"#) == 1)
        for series in ["fanout_mqtt_retained_messages", "fanout_mqtt_sessions"] {
            #expect(sample(series) == 0, "\(series)")
        }
        for series in ["fanout_mqtt_session_messages_dropped_total", "fanout_mqtt_wills_total",
                       "fanout_mqtt_unmappable_total"] {
            #expect(sample(series) == 0, "\(series)")
        }
    }

    @Test func aReloadMovesTheMQTTListener() throws {
        let first = try freePort(), second = try freePort()
        let (path, directory) = try configFile("mqtt_listen: [\"127.0.0.1:\(first)\"]\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try Daemon(arguments: ["--config", path])
        _ = try daemon.stderr.waitForLine(containing: "listening on 127.0.0.1:\(first) (mqtt)", timeout: 10)
        let stays = try LineClient(port: first)
        try stays.send(Self.connect("stays"))
        #expect(try stays.readBytes(4) == Self.accepted)
        try "mqtt_listen: [\"127.0.0.1:\(second)\"]\n".write(toFile: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        #expect(daemon.stderr.all.contains { $0.contains("stopped listening on 127.0.0.1:\(first) (mqtt)") })
        #expect(daemon.stderr.all.contains { $0.contains("listening on 127.0.0.1:\(second) (mqtt)") })
        let moved = try LineClient(port: second)
        try moved.send(Self.connect("moved"))
        #expect(try moved.readBytes(4) == Self.accepted)
        #expect(throws: (any Error).self, "the old address is closed") { try LineClient(port: first) }
        #expect(infoFields(try daemon.client().command("INFO"))["mqtt_connections"] == "2",
                "the connection accepted before the reload stays")
    }

    @Test(arguments: [
        ("mqtt_listen: [\"unix:/tmp/fanout-mqtt.sock\"]\n",
         "line 1: mqtt_listen: unix:/tmp/fanout-mqtt.sock: must be HOST:PORT"),
        ("mqtt_listen: [\"127.0.0.1\"]\n", "line 1: mqtt_listen: "),
        ("mqtt_tls_listen: [\"127.0.0.1:8883\"]\n", "line 1: mqtt_tls_listen: needs tls_cert and tls_key"),
        ("listen: [\"127.0.0.1:7411\"]\nmqtt_listen: [\"127.0.0.1:7411\"]\n",
         "line 2: mqtt_listen: 127.0.0.1:7411 is also listen; give each listener its own address"),
        ("mqtt_listen: [\"127.0.0.1:1883\", \"127.0.0.1:1883\"]\n",
         "line 1: mqtt_listen: 127.0.0.1:1883 is also mqtt_listen; give each listener its own address"),
        ("http_listen: 127.0.0.1:7412\nmqtt_listen: [\"127.0.0.1:7412\"]\n",
         "line 2: mqtt_listen: 127.0.0.1:7412 is also http_listen"),
        ("mqtt_max_sessions: -1\n", "line 1: mqtt_max_sessions: must be 0 ... 100000000"),
        ("mqtt_max_retained: 100000001\n", "line 1: mqtt_max_retained: must be 0 ... 100000000"),
        ("mqtt_session_max_messages: -5\n", "line 1: mqtt_session_max_messages: must be 0 ... 100000000"),
        ("mqtt_session_expiry: -1\n", "line 1: mqtt_session_expiry: expected a number of seconds"),
    ])
    func checkConfigRefusesABadSetting(text: String, message: String) throws {
        let (path, directory) = try configFile(text)
        defer { try? FileManager.default.removeItem(at: directory) }
        let checked = try runDaemon(["--config", path, "--check-config"])
        #expect(checked.status == 78, "\(checked.stdout)")
        #expect(checked.stderr.contains("\(path): \(message)"), "\(checked.stderr)")
    }

    @Test func checkConfigShowsEverySettingFromTheFileAndTheEnvironment() throws {
        let (path, directory) = try configFile("""
            mqtt_listen: ["127.0.0.1:1883"]
            mqtt_max_retained: 5
            mqtt_max_sessions: 6
            mqtt_session_max_messages: 7
            mqtt_session_expiry: 60
            """)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fromFile = try runDaemon(["--config", path, "--check-config"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        for line in ["mqtt_listen: 127.0.0.1:1883", "mqtt_tls_listen: off", "mqtt_max_retained: 5",
                     "mqtt_max_sessions: 6", "mqtt_session_max_messages: 7", "mqtt_session_expiry: 60"] {
            #expect(fromFile.stdout.contains(line + "\n"), "\(line) in \(fromFile.stdout)")
        }
        let fromEnvironment = try runDaemon(["--config", path, "--check-config"], environment: [
            "FANOUTD_MQTT_LISTEN": "127.0.0.1:1884,127.0.0.1:1885", "FANOUTD_MQTT_MAX_RETAINED": "8",
            "FANOUTD_MQTT_MAX_SESSIONS": "9", "FANOUTD_MQTT_SESSION_MAX_MESSAGES": "10",
            "FANOUTD_MQTT_SESSION_EXPIRY": "0",
        ])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        for line in ["mqtt_listen: 127.0.0.1:1884, 127.0.0.1:1885", "mqtt_max_retained: 8", "mqtt_max_sessions: 9",
                     "mqtt_session_max_messages: 10", "mqtt_session_expiry: 0 (until mqtt_max_sessions)"] {
            #expect(fromEnvironment.stdout.contains(line + "\n"), "\(line) in \(fromEnvironment.stdout)")
        }
        let defaults = try runDaemon(["--check-config"])
        for line in ["mqtt_listen: off", "mqtt_max_retained: 10000", "mqtt_max_sessions: 10000",
                     "mqtt_session_max_messages: 1000", "mqtt_session_expiry: 86400"] {
            #expect(defaults.stdout.contains(line + "\n"), "\(line) in \(defaults.stdout)")
        }
    }
}

private let hasOpenSSL = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

@Suite("MQTT over TLS", .threadPerTest, .enabled(if: hasOpenSSL, "the openssl command is not installed"),
       .timeLimit(.minutes(3)))
struct MQTTTLSListenerTests {
    /// `openssl s_client`'s lines for a handshake with `port`, trusting the test CA, closed at once.
    private func handshake(port: Int, _ pki: TestPKI) throws -> (status: Int32, lines: [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", pki.path("ca.pem"),
                             "-verify_return_error", "-brief"]
        process.standardInput = FileHandle.nullDevice
        let output = try CloexecPipe()
        process.standardOutput = output.write
        process.standardError = output.write
        let lines = LineCollector()
        lines.attach(output.read)
        try process.run()
        try output.write.close()
        lines.waitForEnd(timeout: 20)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return (process.terminationStatus, lines.all)
    }

    /// `mqtt_tls_listen` takes tls_cert and tls_key: a client that trusts the test CA completes its handshake,
    /// before and after a reload (which makes the TLS context again from the files, for this listener alone).
    @Test func aTLSHandshakeSucceedsOnTheMQTTTLSListener() throws {
        let pki = try TestPKI()
        let daemon = try Daemon(environment: ["FANOUTD_MQTT_TLS_LISTEN": "127.0.0.1:0",
                                              "FANOUTD_TLS_CERT": pki.path("server.pem"),
                                              "FANOUTD_TLS_KEY": pki.path("server-key.pem")])
        let line = try daemon.stderr.waitForLine(containing: "(mqtt, tls)", timeout: 10)
        let address = try #require(line.components(separatedBy: "listening on ").last?.split(separator: " ").first)
        let port = try #require(Int(address.split(separator: ":").last!))
        let first = try handshake(port: port, pki)
        #expect(first.lines.contains { $0.contains("CONNECTION ESTABLISHED") }, "\(first.lines)")
        #expect(first.lines.contains { $0.contains("Verification: OK") }, "\(first.lines)")
        #expect(first.status == 0)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        let second = try handshake(port: port, pki)
        #expect(second.lines.contains { $0.contains("Verification: OK") }, "\(second.lines)")
        #expect(second.status == 0)
    }

    /// A client that speaks MQTT over TLS gets its CONNACK through the TLS layer and is listed as `mqtts`.
    @Test func anMQTTClientOverTLSIsListedAsMQTTS() throws {
        let pki = try TestPKI()
        let daemon = try Daemon(environment: ["FANOUTD_MQTT_TLS_LISTEN": "127.0.0.1:0",
                                              "FANOUTD_TLS_CERT": pki.path("server.pem"),
                                              "FANOUTD_TLS_KEY": pki.path("server-key.pem")])
        let line = try daemon.stderr.waitForLine(containing: "(mqtt, tls)", timeout: 10)
        let address = try #require(line.components(separatedBy: "listening on ").last?.split(separator: " ").first)
        let port = try #require(Int(address.split(separator: ":").last!))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", pki.path("ca.pem"),
                             "-verify_return_error", "-quiet"]
        let input = Pipe()
        process.standardInput = input
        let output = try CloexecPipe()
        process.standardOutput = output.write
        process.standardError = FileHandle.nullDevice
        try process.run()
        try output.write.close()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        // s_client sends what it reads once the handshake is done; its output is the server's bytes alone.
        try input.fileHandleForWriting.write(contentsOf: MQTTListenerTests.connect("over-tls"))
        let fd = output.read.fileDescriptor
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        while received.count < 4 {
            var buffer = [UInt8](repeating: 0, count: 4 - received.count)
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        #expect(received == MQTTListenerTests.accepted)
        let clients = try daemon.client().command("CLIENTS")
        #expect(clients.contains("transport=mqtts"), "\(clients)")
    }
}
