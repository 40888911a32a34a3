import FanoutTestSupport
import Foundation
import Testing

/// PUBs read in one loop pass go to Redis as one run of the publish script per shard, grouped by subject.
@Suite("Several nodes: batched publishing", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterBatchTests {
    /// 1,000 PUBs on three subjects in one write: every PUB is answered in order, another node's subscriber
    /// gets each subject's messages with consecutive seqs in publishing order, and Redis ran the script far
    /// fewer times than there were PUBs, but never more than `PublishBatch.maxMessages` (256) in one run.
    @Test func pubsReadTogetherGoToRedisInBoundedBatches() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2)
        let subjects = ["b.one", "b.two", "b.three"]
        let subscriber = try rig.nodes[1].client(timeout: 15)
        #expect(try subscriber.command("SUB b.*") == "+OK 1")
        let publisher = try rig.nodes[0].client(timeout: 15)
        #expect(try publisher.command("PUB b.one warm-up") == "+OK 1")
        #expect(try subscriber.readLine() == "MSG b.one 1 warm-up")
        let callsBefore = try rig.shards[0].calls(of: "evalsha")
        let total = 1000
        try publisher.send((0..<total).map { "PUB \(subjects[$0 % 3]) m\($0)\n" }.joined())
        for _ in 0..<total { #expect(try publisher.readLine() == "+OK 1") }
        var bySubject: [String: [ReceivedMessage]] = [:]
        for _ in 0..<total {
            let message = try #require(ReceivedMessage(try subscriber.readLine()))
            bySubject[message.subject, default: []].append(message)
        }
        for (index, subject) in subjects.enumerated() {
            let received = try #require(bySubject[subject])
            let first: UInt64 = subject == "b.one" ? 2 : 1
            #expect(received.map(\.seq) == Array(first..<(first + UInt64(received.count))))
            #expect(received.map(\.payload) == stride(from: index, to: total, by: 3).map { "m\($0)" })
        }
        let runs = try rig.shards[0].calls(of: "evalsha") - callsBefore
        #expect(runs >= (total + 255) / 256, "at most 256 messages per script run")
        #expect(runs <= total / 4, "\(runs) script runs for \(total) PUBs")
    }

    /// A client that closes its side right after its PUBs still gets every reply, then the connection
    /// closes. Redis is paused until the node has sent the PUBs, so the end of input is seen before the
    /// answers come.
    @Test func aClientThatClosesItsSideGetsThePendingReplies() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let watcher = try rig.nodes[0].client(timeout: 15)
        let publisher = try rig.nodes[0].client(timeout: 15)
        rig.shards[0].pause()
        defer { rig.shards[0].resume() }
        try publisher.send((0..<50).map { "PUB h.closed m\($0)\n" }.joined())
        publisher.closeWrite()
        try eventually(timeout: 10, "the PUBs are with Redis") {
            infoFields(try watcher.command("INFO"))["shard0_in_flight"] == "50"
        }
        rig.shards[0].resume()
        let replies = try publisher.readUntilClosed()
        #expect(replies == Array(repeating: "+OK 0", count: 50))
        #expect(try watcher.command("PUB h.closed after") == "+OK 0")
        #expect(try rig.shards[0].cli("GET", "fanout:{h.closed}:seq").hasSuffix(" 51"))
    }

    /// A client that pipelines far more PUBs than max_in_flight is read only as fast as Redis answers: every
    /// PUB is acknowledged, none refused.
    @Test func aPipeliningClientIsHeldBackInsteadOfRefused() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let publisher = try rig.nodes[0].client(timeout: 30)
        try publisher.send((0..<5000).map { "PUB p.fast m\($0)\n" }.joined())
        var refused = 0
        for _ in 0..<5000 where try publisher.readLine() != "+OK 0" { refused += 1 }
        #expect(refused == 0)
        #expect(try rig.shards[0].cli("GET", "fanout:{p.fast}:seq").hasSuffix(" 5000"))
    }

    /// Pipelined PUBs to a subject with history are kept one stream entry each, numbered in order.
    @Test func aBatchOfOneSubjectWithHistoryKeepsEveryMessage() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let publisher = try rig.nodes[0].client(timeout: 15)
        try publisher.send((1...300).map { "PUB h.kept m\($0)\n" }.joined())
        for _ in 1...300 { #expect(try publisher.readLine() == "+OK 0") }
        let reply = try publisher.command("LAST h.kept 300")
        #expect(reply.hasSuffix("seq=300 replayed=300 missed=0"), "\(reply)")
        for number in 1...300 { #expect(try publisher.readLine() == "MSG h.kept \(number) m\(number)") }
    }

    /// The shard's connection drops with a batch in flight, and the PUBs read while its failure is handed out
    /// (the held PING runs, and the connection reads on) fill a batch that cannot be sent: every PUB is still
    /// answered, in order.
    @Test func everyPubIsAnsweredWhenTheShardDropsWithABatchInFlight() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let client = try rig.nodes[0].client(timeout: 30)
        rig.shards[0].pause()
        defer { rig.shards[0].resume() }
        try client.send("PUB d.x first\nPING held\n" + (0..<300).map { "PUB d.x m\($0)\n" }.joined())
        let first = try client.readLine()
        #expect(first.hasPrefix("-ERR unavailable "), "\(first)")
        #expect(try client.readLine() == "+PONG held")
        for _ in 0..<300 {
            let reply = try client.readLine()
            #expect(reply == "+OK 0" || reply.hasPrefix("-ERR unavailable "), "\(reply)")
        }
        #expect(try client.command("PING after") == "+PONG after")
    }

    /// A reload that restarts the engine while PUBs wait on a hung shard: one with Redis, one gathered behind
    /// it. The PUB read after them (held behind a PING) is answered too, not gathered into a batch that no one
    /// sends.
    @Test func aReloadAnswersThePubsReadWhileTheEngineStops() throws {
        let rig = try ClusterRig(shards: 2, nodes: 1)
        let subjects = rig.subjects(prefix: "r", perShard: 1)
        let node = rig.nodes[0]
        let watcher = try node.client(timeout: 15)
        let blocker = try node.client(timeout: 30)
        let client = try node.client(timeout: 30)
        rig.shards[1].pause()
        defer { rig.shards[1].resume() }
        try blocker.send("PUB \(subjects[1]) first\n")
        try eventually(timeout: 10, "a batch is with the hung shard") {
            infoFields(try watcher.command("INFO"))["shard1_in_flight"] == "1"
        }
        // Gathered behind the batch in flight; the PING waits for its reply, and the last PUB is not read yet.
        try client.send("PUB \(subjects[1]) gathered\nPING held\nPUB \(subjects[0]) next\n")
        _ = try watcher.command("PING barrier")
        let urls = rig.shards.map { "\"\($0.url)\"" }.joined(separator: ", ")
        try "cluster:\n  redis: [\(urls)]\n  max_in_flight: 999\n".write(toFile: rig.configPath, atomically: true,
                                                                         encoding: .utf8)
        node.signal(SIGHUP)
        let gathered = try client.readLine()
        #expect(gathered.hasPrefix("-ERR unavailable "), "\(gathered)")
        #expect(try client.readLine() == "+PONG held")
        let next = try client.readLine()
        #expect(next == "+OK 0" || next.hasPrefix("-ERR unavailable "), "\(next)")
        #expect(try client.command("PING after") == "+PONG after")
        #expect(try blocker.readLine().hasPrefix("-ERR unavailable "))
    }

    /// The same through the system's nc: `printf 'PUB ...' | nc -N` prints the reply.
    @Test func netcatSeesTheReplyOfAClusteredPub() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let netcat = try Netcat(port: rig.nodes[0].port, extraArguments: ["-N"])
        try netcat.send("PUB n.cat hello\nPUB n.cat again\n")
        try netcat.finishInput()
        #expect(try netcat.output.waitForLine(containing: "+OK", after: 1, timeout: 15) == "+OK 0")
        #expect(netcat.output.all.filter { $0.hasPrefix("+OK") } == ["+OK 0", "+OK 0"])
    }
}
