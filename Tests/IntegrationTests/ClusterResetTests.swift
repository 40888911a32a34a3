import Foundation
import Testing

/// The `RESET` push on every transport and in the bundled client: a shard restarted without persistence
/// forgets the subjects, their numbering restarts, and each subscriber hears so before the next message.
@Suite("RESET on every transport", .serialized, .timeLimit(.minutes(2)))
struct ClusterResetTests {
    @Test func aRestartedNumberingIsAnnouncedOverTCPWebSocketEventStreamsAndByFanoutSub() throws {
        let rig = try ClusterRig(shards: 1, nodes: 0, clusterExtra: "  heartbeat: 0.1\n  down_after: 0.5\n")
        let node = try rig.startNode(extraArguments: ["--http-listen", "127.0.0.1:0"])
        let publisher = try node.client()
        /// Publishes until the node has a subscriber of `subject` in Redis: exactly one message reaches it.
        func warm(_ subject: String) throws {
            try eventually(timeout: 15, "\(subject) subscribed") { try publisher.command("PUB \(subject) before") == "+OK 1" }
        }
        let line = try node.client()
        #expect(try line.command("SUB r.tcp") == "+OK 1")
        try warm("r.tcp")
        let webSocket = try runPythonCheck("websocket_checks.py", "reset", daemon: node)
        _ = try webSocket.stdout.waitForLine(containing: "subscribed", timeout: 30)
        try warm("r.ws")
        let events = try eventStream(port: try node.httpPort(), query: "subject=r.sse")
        _ = try events.stdout.waitForLine(containing: ": +OK 1", timeout: 10)
        try warm("r.sse")
        // `fanout sub` subscribes with RESUME: a message numbered before its reply's position is not its own.
        let tool = try FanoutTool(["sub", "--server", "127.0.0.1:\(node.port)", "--format", "line", "r.tool"])
        try eventually(timeout: 15, "fanout sub receives") {
            _ = try publisher.command("PUB r.tool before")
            return !tool.stdout.all.isEmpty
        }

        rig.shards[0].kill()
        try rig.shards[0].start()
        try eventually(timeout: 20, "the shard is back") { try publisher.command("PUB r.probe x").hasPrefix("+OK ") }
        for subject in ["r.tcp", "r.ws", "r.sse", "r.tool"] { #expect(try publisher.command("PUB \(subject) after") == "+OK 1") }

        #expect(try line.readLine().hasSuffix(" before"))
        let reset = try line.readLine()
        #expect(reset.hasPrefix("RESET r.tcp epoch=") && reset.hasSuffix(" seq=0 missed=unknown"), "\(reset)")
        #expect(try line.readLine() == "MSG r.tcp 1 after")

        let ws = webSocket.finish(timeout: 30)
        #expect(ws.status == 0 && ws.stdout.contains("ok reset"), "\((ws.stdout + ws.stderr).joined(separator: "\n"))")

        _ = try events.stdout.waitForLine(containing: #""payload":"after""#, timeout: 10)
        let stream = events.stdout.all
        let resetAt = try #require(stream.firstIndex(of: "event: reset"), "\(stream)")
        #expect(stream[resetAt + 1].hasPrefix(#"data: {"subject":"r.sse","epoch":""#))
        #expect(stream[resetAt + 1].hasSuffix(#","seq":0,"missed":null}"#), "\(stream[resetAt + 1])")
        #expect(stream.last { $0.hasPrefix("data: ") } == #"data: {"subject":"r.sse","seq":1,"payload":"after"}"#)
        kill(events.process.processIdentifier, SIGKILL)

        _ = try tool.stdout.waitForLine(containing: "MSG r.tool 1 after", timeout: 10)
        _ = try tool.stderr.waitForLine(containing: "numbering restarted on r.tool", timeout: 10)
        #expect(tool.stdout.all.allSatisfy { $0.hasSuffix(" before") || $0 == "MSG r.tool 1 after" }, "\(tool.stdout.all)")
        kill(tool.process.processIdentifier, SIGTERM)
    }
}
