import Foundation
import Testing

/// Per-user limits through the daemon: over HTTP publish (429 `limit`), and over WebSocket and event streams
/// (Fixtures/user_limit_checks.py), with the users of Fixtures/auth.yaml.
@Suite("Per-user limits over HTTP and WebSocket", .threadPerTest, .timeLimit(.minutes(2)))
struct UserLimitTests {
    static let refused = "publish rate for user sensors over user_publish_rate 1/s"

    /// One POST /publish over a fresh connection: its status line and its body.
    private static func post(port: Int, subject: String, token: String) throws -> (status: String, body: String) {
        let client = try LineClient(port: port)
        try client.send("POST /publish/\(subject) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Length: 1\r\nConnection: close\r\n\r\n1")
        let lines = try client.readUntilClosed()
        return (lines.first ?? "", lines.last ?? "")
    }

    /// The user's bucket is one over TCP and HTTP: a burst of two is spent by one of each, and the next of
    /// each is refused, HTTP with 429 and the limit code, TCP with `-ERR limit`, and neither is published.
    @Test func httpPublishSharesTheUsersBucketAndIsRefusedWith429() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("auth.yaml")],
                                environment: ["FANOUTD_USER_PUBLISH_RATE": "1", "FANOUTD_USER_PUBLISH_BURST": "2"])
        let port = try daemon.httpPort()
        let reader = try LineClient(port: daemon.port)
        _ = try reader.readLine()
        #expect(try reader.command("AUTH reader-secret-token") == "+OK")
        #expect(try reader.command("SUB sensors.>") == "+OK 1")
        let tcp = try LineClient(port: daemon.port)
        _ = try tcp.readLine()
        #expect(try tcp.command("AUTH sensor-secret-token") == "+OK")
        let accepted = try Self.post(port: port, subject: "sensors.a", token: "sensor-secret-token")
        #expect(accepted.status.hasPrefix("HTTP/1.1 200"), "\(accepted)")
        #expect(try tcp.command("PUB sensors.a tcp") == "+OK 1")
        let over = try Self.post(port: port, subject: "sensors.a", token: "sensor-secret-token")
        #expect(over.status.hasPrefix("HTTP/1.1 429"), "\(over)")
        #expect(over.body == #"{"error":"limit","message":"\#(Self.refused)"}"#)
        #expect(try tcp.command("PUB sensors.a tcp") == "-ERR limit \(Self.refused)")
        let forbidden = try Self.post(port: port, subject: "orders.a", token: "sensor-secret-token")
        #expect(forbidden.status.hasPrefix("HTTP/1.1 403"), "refused by its permissions, not the rate: \(forbidden)")
        let delivered = try reader.pushes()
        #expect(delivered.count == 2 && delivered.allSatisfy { $0.hasPrefix("MSG sensors.a ") }, "\(delivered)")
        let info = infoFields(try reader.command("INFO"))
        #expect(info["user_publish_refusals"] == "2" && info["user_connection_refusals"] == "0")
        #expect(info["user_publish_rate"] == "1" && info["user_publish_burst"] == "2")
        let metrics = try curl(["http://127.0.0.1:\(port)/metrics"])
        #expect(metrics.body.contains("fanout_user_publish_refusals_total 2"), "\(metrics.body.suffix(20))")
    }

    /// WebSocket: a second connection of one user is refused with 429 before the upgrade (bearer token) or
    /// with the limit line and a 1008 close (AUTH frame); an event stream with 429; publishes over the rate
    /// with `-ERR limit`.
    @Test func webSocketAndEventStreamConnectionsCountForTheUser() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("auth.yaml")],
                                environment: ["FANOUTD_MAX_CONNECTIONS_PER_USER": "1",
                                              "FANOUTD_USER_PUBLISH_RATE": "1"])
        let run = try runPythonCheck("user_limit_checks.py", "websocket", daemon: daemon).finish(timeout: 90)
        #expect(run.status == 0 && run.stdout.contains("ok websocket"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
        let tcp = try LineClient(port: daemon.port)
        _ = try tcp.readLine()
        #expect(try tcp.command("AUTH reader-secret-token") == "+OK", "the WebSocket's departure freed the place")
        let info = infoFields(try tcp.command("INFO"))
        #expect(info["user_connection_refusals"] == "3", "\(info)")
        #expect(info["max_connections_per_user"] == "1")
    }

    /// The settings are read from the file and the environment, shown by --check-config, and bad values are
    /// refused with the setting's name.
    @Test func theSettingsAreCheckedAndShown() throws {
        let shown = try runDaemon(["--check-config"], environment: [
            "FANOUTD_MAX_CONNECTIONS_PER_USER": "3", "FANOUTD_USER_PUBLISH_RATE": "50",
        ])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("max_connections_per_user: 3\n"), "\(shown.stdout)")
        #expect(shown.stdout.contains("user_publish_rate: 50\nuser_publish_burst: 50\n"), "the burst is the rate")
        for (name, value, problem) in [
            ("FANOUTD_MAX_CONNECTIONS_PER_USER", "-1", "max_connections_per_user: must be at least 1, or 0 for off"),
            ("FANOUTD_USER_PUBLISH_RATE", "-5",
             "user_publish_rate: must be 0 (off) ... 1000000000 messages per second"),
            ("FANOUTD_USER_PUBLISH_BURST", "0", "user_publish_burst: must be 1 ... 1000000000 messages"),
        ] {
            var environment = ["FANOUTD_USER_PUBLISH_RATE": "5"]
            environment[name] = value
            let refused = try runDaemon(["--check-config"], environment: environment)
            #expect(refused.status != 0 && refused.stderr.contains(problem), "\(name)=\(value): \(refused.stderr)")
        }
    }

    /// SIGHUP applies new limits at once: a lowered max_connections_per_user refuses the next connection and
    /// keeps the ones already over it; a rate set by the reload holds from the next publish.
    @Test func aReloadAppliesAtOnceAndClosesNoOne() throws {
        let users = try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8)
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("user-limits-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: path) }
        try (users + "\nmax_connections_per_user: 2\n").write(to: path, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", path.path])
        func login() throws -> LineClient {
            let client = try LineClient(port: daemon.port)
            _ = try client.readLine()
            try client.sendLine("AUTH sensor-secret-token")
            return client
        }
        let kept = try (0..<2).map { _ in try login() }
        for client in kept { #expect(try client.readLine() == "+OK") }
        try (users + "\nmax_connections_per_user: 1\nuser_publish_rate: 1\n")
            .write(to: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        for client in kept { #expect(try client.command("PING") == "+PONG", "a lowered limit closes no one") }
        let late = try login()
        #expect(try late.readLine() == "-ERR limit too many connections for user sensors (max_connections_per_user 1)")
        #expect(try late.readLineOrEOF() == nil)
        #expect(try kept[0].command("PUB sensors.a 1") == "+OK 0")
        #expect(try kept[1].command("PUB sensors.a 2") == "-ERR limit \(Self.refused)")
    }

    /// A user's connections count together whatever listener they came through: one over TCP fills a limit of
    /// one, and the same user's AUTH over the unix socket is refused and closed.
    @Test func tcpAndUnixConnectionsOfOneUserCountTogether() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-ul-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let daemon = try Daemon(arguments: ["--config", try fixture("auth.yaml")],
                                environment: ["FANOUTD_MAX_CONNECTIONS_PER_USER": "1"],
                                listen: ["127.0.0.1:0", "unix:\(path)"])
        let tcp = try LineClient(port: daemon.port)
        _ = try tcp.readLine()
        #expect(try tcp.command("AUTH sensor-secret-token") == "+OK")
        let local = try LineClient(unixPath: path)
        _ = try local.readLine()
        #expect(try local.command("AUTH sensor-secret-token")
            == "-ERR limit too many connections for user sensors (max_connections_per_user 1)")
        #expect(try local.readLineOrEOF() == nil)
        let other = try LineClient(unixPath: path)
        _ = try other.readLine()
        #expect(try other.command("AUTH reader-secret-token") == "+OK", "another user is not held back")
    }
}
