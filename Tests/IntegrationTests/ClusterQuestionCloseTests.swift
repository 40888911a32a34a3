import FanoutTestSupport
import Foundation
import Testing

/// A question put through the cluster is forgotten on every node as soon as nothing is left to wait for: when
/// the asking node closes it (its cap of answers, its timeout, its asker gone), a late answer on another node
/// gets `+OK 0`, as it would on the asking node; when every receiver on a node answered, that node forgets it
/// on its own. `cluster_questions_held` in INFO counts what a node still holds.
@Suite("Several nodes, closed questions", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterQuestionCloseTests {
    private func held(on node: Daemon) throws -> String? {
        let client = try node.client(timeout: 15)
        defer { client.close() }
        return infoFields(try client.command("INFO"))["cluster_questions_held"]
    }

    /// Asks on node 0 and reads the question's push on each responder (on node 1); returns the id.
    private func ask(_ line: String, from asker: LineClient, to responders: [LineClient]) throws -> String {
        let reply = try asker.command(line).split(separator: " ")
        #expect(reply.count == 3 && reply[0] == "+OK" && reply[2] == "2", "\(reply)")
        let id = String(reply[1])
        let payload = line.split(separator: " ").last.map(String.init) ?? ""
        for responder in responders { #expect(try responder.readLine() == "ASK svc.q \(id) \(payload)") }
        return id
    }

    @Test func aClosedQuestionIsForgottenOnEveryNode() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2)
        let remoteNode = rig.nodes[1]
        let responders = try (0..<2).map { _ in try remoteNode.client(timeout: 15) }
        for responder in responders { #expect(try responder.command("SUB svc.q") == "+OK 1") }
        let asker = try rig.nodes[0].client(timeout: 15)
        #expect(try held(on: remoteNode) == "0")

        // Every receiver answered: the node forgets the question with its last answer, with no word from the
        // asking node (INFO on node 1 is read after both answers were taken there).
        let all = try ask("ASK svc.q 30000 0 all", from: asker, to: responders)
        #expect(try held(on: remoteNode) == "1")
        for responder in responders { #expect(try responder.command("ANSWER \(all) yes") == "+OK 1") }
        #expect(try held(on: remoteNode) == "0")
        var lines: [String] = []
        while lines.last?.hasPrefix("DONE ") != true { lines.append(try asker.readLine()) }
        #expect(lines.last == "DONE \(all) asked=2 answered=2 gone=0", "\(lines)")

        // The cap of answers closes it: the silent receiver's late answer is not taken.
        let capped = try ask("ASK svc.q 30000 1 cap", from: asker, to: responders)
        #expect(try responders[0].command("ANSWER \(capped) first") == "+OK 1")
        #expect(try asker.readLine().hasPrefix("ANSWER \(capped) "))
        #expect(try asker.readLine() == "DONE \(capped) asked=2 answered=1 gone=0")
        try eventually(timeout: 5, "node 1 forgets the capped question") { try held(on: remoteNode) == "0" }
        #expect(try responders[1].command("ANSWER \(capped) late") == "+OK 0")

        // The timeout closes it: node 1 forgets it then, not a second later.
        let timed = try ask("ASK svc.q 300 0 slow", from: asker, to: responders)
        #expect(try asker.readLine() == "DONE \(timed) asked=2 answered=0 gone=0")
        let closedAt = Date()
        try eventually(timeout: 5, "node 1 forgets the timed-out question") { try held(on: remoteNode) == "0" }
        #expect(Date().timeIntervalSince(closedAt) < 0.8, "forgotten at the close, before the fallback expiry")
        #expect(try responders[0].command("ANSWER \(timed) late") == "+OK 0")

        // The asker vanishes: its question closes, and node 1 stops taking answers to it.
        let leaving = try rig.nodes[0].client(timeout: 15)
        let orphan = try ask("ASK svc.q 30000 0 orphan", from: leaving, to: responders)
        leaving.close()
        try eventually(timeout: 5, "node 1 forgets the vanished asker's question") { try held(on: remoteNode) == "0" }
        for responder in responders { #expect(try responder.command("ANSWER \(orphan) late") == "+OK 0") }
    }

    /// The ASK's reply waits for Redis to take the question; a DONE that comes first (the timeout passed while
    /// the PUBLISH was held upstream) goes behind it, never before.
    @Test func aDoneThatComesFirstWaitsBehindTheAsksReply() throws {
        let rig = try ClusterRig(shards: 1, nodes: 0)
        let proxy = try CuttingProxy(forwardingTo: rig.shards[0].port)
        let configPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-done-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: configPath) }
        try "cluster:\n  redis: [\"redis://127.0.0.1:\(proxy.port)\"]\n".write(toFile: configPath, atomically: true,
                                                                                encoding: .utf8)
        let node = try Daemon(arguments: ["--config", configPath])
        try rig.waitUntilUp(node, shard: 0)
        let asker = try node.client(timeout: 15)
        let watcher = try node.client(timeout: 15)
        proxy.holdUpstream()
        try asker.sendLine("ASK svc.slow 50 0 anyone?")
        try proxy.waitForHeld(containing: "fanout:questions", timeout: 10)
        try eventually("the question timed out while Redis had not taken it") {
            try infoFields(watcher.command("INFO"))["ask_timeouts"] == "1"
        }
        proxy.releaseUpstream()
        let reply = try asker.readLine().split(separator: " ")
        #expect(reply.count == 3 && reply[0] == "+OK", "the reply first: \(reply)")
        #expect(try asker.readLine() == "DONE \(reply.count > 1 ? reply[1] : "") asked=0 answered=0 gone=0")
    }
}
