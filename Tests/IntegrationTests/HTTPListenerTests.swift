import Foundation
import Testing

@Suite("HTTP listener", .timeLimit(.minutes(2)))
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
}
