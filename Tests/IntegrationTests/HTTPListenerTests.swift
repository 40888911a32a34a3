import Foundation
import Testing

@Suite("HTTP listener", .threadPerTest, .timeLimit(.minutes(2)))
struct HTTPListenerTests {
    /// `http_listen` and `metrics_listen` (its old name) both serve /healthz; both at once must agree.
    @Test func httpListenAndItsAlias() throws {
        for key in ["FANOUTD_HTTP_LISTEN", "FANOUTD_METRICS_LISTEN"] {
            let daemon = try Daemon(environment: [key: "127.0.0.1:0"])
            let health = try httpGet(port: try daemon.httpPort(), path: "/healthz")
            #expect(health.status.contains(" 200 "), "\(key)")
        }
        let clash = try runDaemon(["--check-config"], environment: ["FANOUTD_HTTP_LISTEN": "127.0.0.1:1", "FANOUTD_METRICS_LISTEN": "127.0.0.1:2"])
        #expect(clash.status != 0 && clash.stderr.contains("http_listen and metrics_listen"), "\(clash.stderr)")
        let shown = try runDaemon(["--check-config", "--http-listen", "127.0.0.1:7412"])
        #expect(shown.stdout.contains("http_listen: 127.0.0.1:7412"), "\(shown.stdout)")
    }

    /// A client that trickles its request head is cut off at the request timeout without holding up others.
    @Test func slowHeadersAreCutOffAndOthersServed() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"], environment: ["FANOUTD_HTTP_REQUEST_TIMEOUT": "1"])
        let port = try daemon.httpPort()
        let slow = try LineClient(port: port, timeout: 20)
        try slow.send(Array("GET /healthz HTTP/1.1\r\nX-Slow: ".utf8))
        #expect(try httpGet(port: port, path: "/healthz").status.contains(" 200 "), "others are served meanwhile")
        let started = Date()
        #expect(try slow.readLine().contains(" 408 "))
        #expect(Date().timeIntervalSince(started) < 5)
    }

    /// Slow request heads count against max_connections_per_ip: one address cannot take every slot with them.
    @Test func slowHeadsCountAgainstThePerAddressLimit() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"], environment: ["FANOUTD_MAX_CONNECTIONS_PER_IP": "2"])
        let port = try daemon.httpPort()
        let first = try LineClient(port: port)
        try first.send(Array("GET /healthz HTTP/1.1\r\n".utf8))
        let second = try LineClient(port: port)
        try second.send(Array("GET /healthz HTTP/1.1\r\n".utf8))
        let third = try LineClient(port: port)
        #expect(try third.readLine().contains(" 503 "), "a third head from the same address is refused")
        try first.send(Array("\r\n".utf8))
        #expect(try first.readLine().contains(" 200 "))
        _ = try first.readUntilClosed()
        try eventually("the finished request frees its slot") {
            let fourth = try LineClient(port: port)
            try fourth.send(Array("GET /healthz HTTP/1.1\r\n\r\n".utf8))
            return try fourth.readLine().contains(" 200 ")
        }
        withExtendedLifetime(second) {}
    }

    /// SIGHUP opens http_listen when it appears, moves it when it changes and closes it when it goes,
    /// without touching the protocol's clients.
    @Test func reloadOpensMovesAndClosesTheHTTPListener() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        try "max_line: 1024\n".write(to: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config.path])
        let client = try daemon.client()
        #expect(try client.command("SUB stays") == "+OK 1")

        let first = try freePort()
        try "http_listen: \"127.0.0.1:\(first)\"\n".write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "serving HTTP on http://127.0.0.1:\(first)/", timeout: 10)
        #expect(try httpGet(port: first, path: "/healthz").body == ["ok"])

        let second = try freePort()
        try "metrics_listen: \"127.0.0.1:\(second)\"\n".write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "serving HTTP on http://127.0.0.1:\(second)/", timeout: 10)
        #expect(try httpGet(port: second, path: "/healthz").body == ["ok"])
        #expect(throws: (any Error).self, "the old address is closed") { try LineClient(port: first) }

        try "max_line: 1024\n".write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", after: 2, timeout: 10)
        #expect(throws: (any Error).self, "http_listen removed: nothing listens") { try LineClient(port: second) }
        #expect(try client.command("PING") == "+PONG", "the protocol's client stayed")
    }
}
