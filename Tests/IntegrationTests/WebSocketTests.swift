import Foundation
import Testing

/// Runs `check` of websocket_checks.py (the Python `websockets` library plus raw sockets) and expects "ok".
private func expectCheckPasses(_ check: String, daemon: Daemon, extra: [String] = [],
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
    let run = try runPythonCheck("websocket_checks.py", check, daemon: daemon, extra: extra).finish(timeout: 90)
    #expect(run.status == 0 && run.stdout.contains("ok \(check)"),
            "\(check): \((run.stdout + run.stderr).joined(separator: "\n"))", sourceLocation: sourceLocation)
}

@Suite("WebSocket", .threadPerTest, .timeLimit(.minutes(2)))
struct WebSocketTests {
    static let http = ["--http-listen", "127.0.0.1:0"]

    /// Round trips both ways with TCP clients, two lines in one frame, fragmentation, CLIENTS' transport,
    /// ping and pong, QUIT's close and the client's close echoed.
    @Test func roundTrips() throws {
        try expectCheckPasses("roundtrip", daemon: try Daemon(arguments: Self.http))
    }

    /// A message published over TCP arrives as one text frame per line.
    @Test func messagesArriveFramed() throws {
        try expectCheckPasses("delivered", daemon: try Daemon(arguments: Self.http))
    }

    /// A run of over 4 KiB to a WebSocket subscriber and an event stream of a pattern: each shares its own
    /// framing of the run, never the other transport's.
    @Test func aRunToWebSocketAndEventStreamReceiversFramesEachItsWay() throws {
        try expectCheckPasses("mixed-run", daemon: try Daemon(arguments: Self.http))
    }

    /// 1003 binary, 1007 invalid UTF-8, 1009 over max_line (one frame, and fragments together); a long line
    /// that fits is answered; the server goes on serving.
    @Test func closeCodes() throws {
        try expectCheckPasses("close-codes", daemon: try Daemon(arguments: Self.http, environment: ["FANOUTD_MAX_LINE": "512"]))
    }

    /// Missing or malformed key, wrong version, no upgrade, foreign Origin, unknown path, garbage and endless
    /// heads; unmasked, reserved-bit, fragmented-control, oversize and unknown-opcode frames; the RFC's accept value.
    @Test func badHandshakesAndFrames() throws {
        try expectCheckPasses("bad-handshakes", daemon: try Daemon(arguments: Self.http))
    }

    @Test func allowedOriginsReplaceTheSameHostRule() throws {
        let daemon = try Daemon(arguments: Self.http, environment: ["FANOUTD_HTTP_ALLOWED_ORIGINS": "https://app.example"])
        try expectCheckPasses("allowed-origin", daemon: daemon)
    }

    /// AUTH as a frame, a bearer token on the upgrade, and a wrong bearer token.
    @Test func authentication() throws {
        let daemon = try Daemon(arguments: Self.http + ["--config", try fixture("auth.yaml")])
        try expectCheckPasses("auth", daemon: daemon, extra: ["reader-secret-token"])
    }

    /// A subscriber that stops reading is dropped at max_pending_bytes, and others are still served.
    @Test func aWebSocketThatStopsReadingIsASlowConsumer() throws {
        let daemon = try Daemon(arguments: Self.http, environment: [
            "FANOUTD_MAX_PENDING_BYTES": "65536", "FANOUTD_SEND_BUFFER_BYTES": "4096", "FANOUTD_MAX_LINE": "2048",
        ])
        try expectCheckPasses("slow-consumer", daemon: daemon)
    }

    /// A stopping server says so on the WebSocket, then closes with 1001.
    @Test func shutdownClosesWithGoingAway() throws {
        let daemon = try Daemon(arguments: Self.http)
        let check = try runPythonCheck("websocket_checks.py", "shutdown", daemon: daemon)
        _ = try check.stdout.waitForLine(containing: "connected", timeout: 20)
        daemon.signal(SIGTERM)
        let run = check.finish(timeout: 30)
        #expect(run.status == 0 && run.stdout.contains("ok shutdown"), "\((run.stdout + run.stderr).joined(separator: "\n"))")
        #expect(daemon.waitForExit(timeout: 20) == 0)
    }

    /// A WebSocket subscriber stays in the subject's weak set only while connected: after it goes, a publish
    /// reaches nobody and the connection objects are back to the TCP client alone.
    @Test func aDepartedWebSocketLeavesNoSubscriber() throws {
        let daemon = try Daemon(arguments: Self.http)
        let check = try runPythonCheck("websocket_checks.py", "roundtrip", daemon: daemon)
        #expect(check.finish(timeout: 90).status == 0)
        let client = try daemon.client()
        try eventually("the WebSocket connections are gone") {
            let info = try client.command("INFO")
            return info.contains(" clients=1 ") && info.contains(" connection_objects=1 ")
        }
        #expect(try client.command("PUB news.uk anyone") == "+OK 0")
    }
}
