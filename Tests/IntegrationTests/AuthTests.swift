import Foundation
import Testing

private let sensorsToken = "sensor-secret-token"
private let readerToken = "reader-secret-token"

private func authDaemon(environment: [String: String] = [:], config: String? = nil) throws -> Daemon {
    try Daemon(arguments: ["--config", try config ?? fixture("auth.yaml")], environment: environment)
}

/// A connection that has read the greeting and, given a token, authenticated.
private func login(_ daemon: Daemon, _ token: String?) throws -> LineClient {
    let client = try LineClient(port: daemon.port)
    #expect(try client.readLine().contains(" auth=required "))
    if let token { #expect(try client.command("AUTH \(token)") == "+OK") }
    return client
}

@Suite("Authentication and permissions", .threadPerTest, .timeLimit(.minutes(3)))
struct AuthTests {
    @Test func onlyAuthPingHelpAndQuitWorkBeforeAuth() throws {
        let daemon = try authDaemon()
        let client = try login(daemon, nil)
        #expect(try client.command("PING") == "+PONG")
        #expect(try client.command("HELP").hasPrefix("+OK "))
        for command in ["SUB a", "PUB a b", "UNSUB", "INFO", "CHANNELS", "CLIENTS"] {
            #expect(try client.command(command).hasPrefix("-ERR auth-required "), "\(command)")
        }
        #expect(try client.command("AUTH wrong").hasPrefix("-ERR denied "))
        #expect(try client.command("AUTH \(readerToken)") == "+OK")
        #expect(try client.command("SUB news") == "+OK 1")
        #expect(try client.command("QUIT") == "+OK bye")
    }

    @Test func publishAndSubscribePermissions() throws {
        let daemon = try authDaemon()
        let sensors = try login(daemon, sensorsToken)
        let reader = try login(daemon, readerToken)
        #expect(try sensors.command("PUB sensors.kitchen.temp 21.5") == "+OK 0")
        #expect(try sensors.command("PUB alarms.fire yes").hasPrefix("-ERR denied "))
        #expect(try sensors.command("SUB sensors.>").hasPrefix("-ERR denied "), "sensors may not subscribe")
        #expect(try sensors.command("INFO").hasPrefix("-ERR denied "), "INFO needs admin")
        #expect(try sensors.command("CLIENTS").hasPrefix("-ERR denied "))
        #expect(try reader.command("PUB sensors.kitchen.temp 1").hasPrefix("-ERR denied "))
        #expect(try reader.command("INFO").hasPrefix("+OK version="))
        #expect(try reader.command("CLIENTS").hasPrefix("+OK 2 "))
        #expect(try reader.command("SUB sensors.secret.>").hasPrefix("-ERR denied "), "wholly denied")
        #expect(try reader.command("SUB sensors.secret.keys").hasPrefix("-ERR denied "))
    }

    /// A permitted wildcard that overlaps a denied subject never delivers from it.
    @Test func wildcardOverlappingADeniedSubjectDoesNotLeak() throws {
        let daemon = try authDaemon()
        let reader = try login(daemon, readerToken)
        #expect(try reader.command("SUB >") == "+OK 1")
        let sensors = try login(daemon, sensorsToken)
        #expect(try sensors.command("PUB sensors.secret.key hunter2") == "+OK 0", "withheld: not counted")
        #expect(try sensors.command("PUB sensors.kitchen.temp 21") == "+OK 1")
        #expect(try readMessage(reader) == ("sensors.kitchen.temp", 1, "21"), "the secret never arrived")
    }

    @Test func unauthenticatedConnectionsAreClosedAfterTheTimeout() throws {
        let daemon = try authDaemon()
        let client = try login(daemon, nil)
        let started = Date()
        let lines = try client.readUntilClosed()
        #expect(lines.count == 1 && lines[0].hasPrefix("-ERR auth-required "))
        #expect(Date().timeIntervalSince(started) >= 0.9)
    }

    @Test func failedAttemptsAreDelayedThenDisconnected() throws {
        let daemon = try authDaemon(environment: ["FANOUTD_AUTH_TIMEOUT": "10"])
        let client = try login(daemon, nil)
        try client.send("AUTH bad-1\nAUTH bad-2\nAUTH bad-3\nPING\n")
        #expect(try client.readLine() == "-ERR denied invalid token")
        let afterFirst = Date()
        #expect(try client.readLine() == "-ERR denied invalid token")
        #expect(Date().timeIntervalSince(afterFirst) >= 0.2, "the next attempt waits")
        #expect(try client.readLine().hasPrefix("-ERR denied too many failed AUTH attempts"))
        #expect(try client.readUntilClosed().isEmpty, "closed before the PING is read")
    }

    @Test func reloadShrinkingPermissionsRevokesSubscriptions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        let original = try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8)
        try original.write(to: config, atomically: true, encoding: .utf8)
        let daemon = try authDaemon(config: config.path)
        let reader = try login(daemon, readerToken)
        #expect(try reader.command("SUB sensors.> weather") == "+OK 2")
        try original.replacingOccurrences(of: "subscribe: [\">\"]", with: "subscribe: [\"weather\"]")
            .write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(try reader.readLine() == "-ERR denied revoked: no longer allowed to subscribe to sensors.>")
        let sensors = try login(daemon, sensorsToken)
        #expect(try sensors.command("PUB sensors.kitchen.temp 3") == "+OK 0")
        #expect(try reader.command("SUB sensors.x").hasPrefix("-ERR denied "))
        #expect(try reader.command("UNSUB") == "+OK 0", "only weather was left")
    }

    @Test func perAddressConnectionLimit() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_CONNECTIONS_PER_IP": "2"])
        let first = try daemon.client()
        let second = try daemon.client()
        let third = try LineClient(port: daemon.port)
        #expect(try third.readLine().hasPrefix("-ERR limit too many connections from 127.0.0.1"))
        #expect(try third.readLineOrEOF() == nil)
        #expect(try first.command("PING") == "+PONG")
        _ = second
    }

    @Test func theClientAuthenticatesWithATokenFromOptionOrEnvironment() throws {
        let daemon = try authDaemon()
        let server = "127.0.0.1:\(daemon.port)"
        let sub = try FanoutTool(["sub", "--server", server, "--count", "1", "sensors.>"],
                                 environment: ["FANOUT_TOKEN": readerToken])
        try eventually("the reader subscribed") {
            let observer = try login(daemon, readerToken)
            return try observer.command("CHANNELS").contains("sensors.>=1")
        }
        let pub = try FanoutTool.run(["pub", "--server", server, "--token", sensorsToken, "sensors.door", "open"])
        #expect(pub.status == 0)
        #expect(pub.stdout == ["1"])
        #expect(sub.finish().stdout == ["open"])
        let anonymous = try FanoutTool.run(["pub", "--server", server, "sensors.door", "x"])
        #expect(anonymous.status == 1)
        #expect(anonymous.stderr.first?.hasPrefix("fanout: server error: auth-required ") == true)
        let wrong = try FanoutTool.run(["info", "--server", server, "--token", "nope"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.first?.hasPrefix("fanout: server error: denied ") == true)
    }

    /// Runs `fanoutd --hash-token` (plus `extra`) with `token` on stdin.
    private func hashToken(_ token: String, _ extra: [String] = []) throws -> (status: Int32, lines: [String]) {
        let tool = Process()
        tool.executableURL = Daemon.executable
        tool.arguments = ["--hash-token"] + extra
        let input = try CloexecPipe(), output = try CloexecPipe()
        tool.standardInput = input.read
        tool.standardOutput = output.write
        tool.standardError = output.write
        try tool.run()
        try input.read.close()
        try output.write.close()
        try input.write.write(contentsOf: Data(token.utf8))
        try input.write.close()
        let lines = LineCollector()
        lines.attach(output.read)
        lines.waitForEnd(timeout: 10)
        tool.waitUntilExit()
        return (tool.terminationStatus, lines.all)
    }

    @Test func hashTokenPrintsAUsableHash() throws {
        let result = try hashToken("my-new-token-with-enough-bytes")
        #expect(result.status == 0)
        let line = try #require(result.lines.first)
        #expect(line.wholeMatch(of: #/token_hash: sha256\$[0-9a-f]{32}\$[0-9a-f]{64}/#) != nil, "\(line)")
    }

    @Test func hashTokenRefusesShortTokensUnlessForced() throws {
        let refused = try hashToken("short-token")
        #expect(refused.status == 64)
        #expect(refused.lines.first?.contains("use at least 16 random bytes") == true, "\(refused.lines)")
        let forced = try hashToken("short-token", ["--force"])
        #expect(forced.status == 0)
        #expect(forced.lines.first?.hasPrefix("token_hash: sha256$") == true)
    }

    @Test func failedAttemptsAreThrottledPerAddressAcrossConnections() throws {
        let daemon = try authDaemon(environment: ["FANOUTD_AUTH_TIMEOUT": "10"])
        // Connect, one wrong AUTH, close: the bucket of 10 failures empties, then the address is refused unchecked.
        var replies: [String] = []
        for _ in 0..<12 {
            let client = try login(daemon, nil)
            replies.append(try client.command("AUTH wrong-token"))
            client.close()
        }
        #expect(replies.prefix(10).allSatisfy { $0 == "-ERR denied invalid token" }, "\(replies)")
        #expect(replies[10].hasPrefix("-ERR denied too many failed AUTH attempts from 127.0.0.1; try again in "))
        // Even the right token waits out the lockout: it is not checked.
        let blocked = try login(daemon, nil)
        #expect(try blocked.command("AUTH \(readerToken)").hasPrefix("-ERR denied too many failed AUTH attempts"))
        // The log says it once per interval, not once per attempt.
        let logged = daemon.stderr.all.filter { $0.contains("AUTH failed") }
        #expect(logged.count == 1, "\(logged)")
    }

    @Test func failuresDoNotExtendTheAuthDeadline() throws {
        let daemon = try authDaemon(environment: ["FANOUTD_MAX_AUTH_FAILURES": "100"])
        let client = try login(daemon, nil)
        let started = Date()
        // auth_timeout is 1 s in the fixture: a failure every 300 ms must not keep the connection.
        var closedAfter: TimeInterval?
        for _ in 0..<20 {
            guard (try? client.sendLine("AUTH wrong")) != nil else { break }
            if let line = try client.readLineOrEOF(), line.hasPrefix("-ERR auth-required ") || line.hasPrefix("-ERR denied") {
                if line.hasPrefix("-ERR auth-required ") {
                    closedAfter = Date().timeIntervalSince(started)
                    break
                }
                continue
            }
            closedAfter = Date().timeIntervalSince(started)
            break
        }
        let after = try #require(closedAfter, "the connection outlived 20 failed attempts")
        #expect(after < 3, "closed at auth_timeout, not later: \(after)s")
    }

    @Test func unauthenticatedConnectionsHaveTheirOwnCap() throws {
        let daemon = try authDaemon(environment: ["FANOUTD_MAX_UNAUTHENTICATED": "3", "FANOUTD_AUTH_TIMEOUT": "30"])
        let waiting = try (0..<3).map { _ in try login(daemon, nil) }
        let refused = try LineClient(port: daemon.port)
        #expect(try refused.readLine().hasPrefix("-ERR limit too many connections waiting to authenticate"))
        // One authenticates and frees its place for a newcomer.
        #expect(try waiting[0].command("AUTH \(readerToken)") == "+OK")
        let admitted = try LineClient(port: daemon.port)
        #expect(try admitted.readLine().contains(" auth=required "))
        #expect(try waiting[0].command("INFO").contains("clients=4"))
    }
}
