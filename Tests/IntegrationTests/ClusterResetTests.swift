import Foundation
import Testing

/// The `RESET` push on every transport and in the bundled client: a shard restarted without persistence
/// forgets the subjects, their numbering restarts, and each subscriber hears so before the next message.
@Suite("RESET on every transport", .threadPerTest, .serialized, .timeLimit(.minutes(2)))
struct ClusterResetTests {
    /// A subscriber dropped as a slow consumer while a run of messages from Redis is being written out leaves,
    /// and the others get that run once: the departure does not close and flush the run again from inside.
    @Test func aSlowConsumerDroppedMidRunLeavesTheOthersEachMessageOnce() throws {
        let rig = try ClusterRig(shards: 1, nodes: 0)
        let node = try rig.startNode(environment: ["FANOUTD_MAX_PENDING_BYTES": "131072"])
        let stalled = try LineClient(port: node.port, timeout: 20, receiveBuffer: 4096)
        #expect(try stalled.readLine().hasPrefix("+HELLO "))
        #expect(try stalled.command("SUB big.x") == "+OK 1")
        let reader = try node.client(timeout: 20)
        #expect(try reader.command("SUB big.x") == "+OK 1")
        // The reader reads all along, on a thread of its own; the stalled one never does.
        let count = 1500
        let lines = LineCollection()
        Thread.detachNewThread {
            for _ in 0..<count {
                guard let line = try? reader.readLine() else { break }
                lines.append(line)
            }
            lines.finish()
        }
        let publisher = try node.client(timeout: 20)
        let payload = String(repeating: "b", count: 1000)
        try publisher.send((1...count).map { "PUB big.x \($0) \(payload)\n" }.joined())
        for _ in 1...count { _ = try publisher.readLine() }
        let received = try lines.wait(timeout: 20)
        let seqs = received.compactMap { ReceivedMessage($0)?.seq }
        #expect(seqs.count == received.count, "only messages: \(received.first { ReceivedMessage($0) == nil } ?? "")")
        #expect(seqs == Array(1...UInt64(count)), "each message once, in order")
        let info = infoFields(try publisher.command("INFO"))
        #expect(info["slow_consumers"] == "1", "the stalled subscriber was dropped: \(info["slow_consumers"] ?? "-")")
    }

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

/// Lines one thread collects for another to wait on.
private final class LineCollection: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private let done = DispatchSemaphore(value: 0)

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    func finish() { done.signal() }

    func wait(timeout: TimeInterval) throws -> [String] {
        guard done.wait(timeout: .now() + timeout) == .success else {
            throw TestFailure("the reader did not finish within \(timeout) s")
        }
        return lock.withLock { lines }
    }
}
