import FanoutTestSupport
import Foundation
import Testing

/// Replays on a clustered node: read from the subject's stream no further than they send, and sent a slice per
/// loop pass like a standalone replay, with live messages and the connection's commands behind them.
@Suite("Several nodes: replays", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterReplayTests {
    /// 8,000 messages of about 900 bytes (7 MB): the reply, every message in order, and only then the reply to
    /// the command sent behind the LAST; a message published once the reply is here comes after the replay.
    @Test func aLongReplayKeepsItsOrderAndTheCommandsBehindItWait() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let node = rig.nodes[0]
        let publisher = try node.client(timeout: 60)
        let filler = String(repeating: "x", count: 900)
        try publisher.send((1...8000).map { "PUB h.long m\($0) \(filler)\n" }.joined())
        for _ in 1...8000 { #expect(try publisher.readLine() == "+OK 0") }
        let reader = try node.client(timeout: 60)
        try reader.send("LAST h.long 8000\nPING after\n")
        let reply = try reader.readLine()
        #expect(reply.hasPrefix("+OK 1 ") && reply.hasSuffix(" seq=8000 replayed=8000 missed=0"), "\(reply)")
        // The reader's subscription is in effect in Redis once its reply is here: the node counts as a receiver.
        #expect(try publisher.command("PUB h.long live") == "+OK 1")
        // The whole replay, then the PING's reply; the live message follows the replay, before or after it.
        var seqs: [UInt64] = []
        var seqsBeforePong: Int?
        while seqsBeforePong == nil || seqs.last != 8001 {
            let line = try reader.readLine()
            if line == "+PONG after" {
                seqsBeforePong = seqs.count
                continue
            }
            let message = try #require(ReceivedMessage(line), "\(line)")
            seqs.append(message.seq)
        }
        #expect(seqs == Array(1...8001))
        #expect(seqsBeforePong.map { $0 >= 8000 } == true)
    }

    /// Redis reads the stream 128 entries a call from the newest down and stops at what it will not send:
    /// `LAST h.x 1` costs one read however long the stream, `LAST h.x 1000` eight.
    @Test func aReplayReadsTheStreamNoFurtherThanItSends() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let client = try rig.nodes[0].client(timeout: 30)
        try client.send((1...3000).map { "PUB h.x m\($0)\n" }.joined())
        for _ in 1...3000 { #expect(try client.readLine() == "+OK 0") }
        var before = try rig.shards[0].calls(of: "xrevrange")
        #expect(try client.command("LAST h.x 1").hasSuffix("seq=3000 replayed=1 missed=0"))
        #expect(try client.readLine() == "MSG h.x 3000 m3000")
        #expect(try rig.shards[0].calls(of: "xrevrange") - before == 1)
        before = try rig.shards[0].calls(of: "xrevrange")
        #expect(try client.command("LAST h.x 1000").hasSuffix("replayed=1000 missed=0"))
        for number in 2001...3000 { #expect(try client.readLine() == "MSG h.x \(number) m\(number)") }
        #expect(try rig.shards[0].calls(of: "xrevrange") - before == 8)
        // After a position: only what follows it.
        let position = try client.command("RESUME h.x")
        let epoch = try #require(position.split(separator: " ").first { $0.hasPrefix("epoch=") }).dropFirst(6)
        before = try rig.shards[0].calls(of: "xrevrange")
        #expect(try client.command("RESUME h.x \(epoch) 2990").hasSuffix("replayed=10 missed=0"))
        for number in 2991...3000 { #expect(try client.readLine() == "MSG h.x \(number) m\(number)") }
        #expect(try rig.shards[0].calls(of: "xrevrange") - before == 1)
    }
}
