import FanoutTestSupport
import Foundation
import Testing

/// PUBs read in one loop pass go to Redis as one run of the publish script per shard, grouped by subject.
@Suite("Several nodes: batched publishing", .serialized, .timeLimit(.minutes(3)))
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
        let callsBefore = try evalshaCalls(rig)
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
        let runs = try evalshaCalls(rig) - callsBefore
        #expect(runs >= (total + 255) / 256, "at most 256 messages per script run")
        #expect(runs <= total / 4, "\(runs) script runs for \(total) PUBs")
    }

    /// A client that closes its side right after its PUBs still gets every reply, then the connection
    /// closes: the PUBs were in Redis's hands when the end of input came.
    @Test func aClientThatClosesItsSideGetsThePendingReplies() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let publisher = try rig.nodes[0].client(timeout: 15)
        try publisher.send((0..<50).map { "PUB h.closed m\($0)\n" }.joined())
        publisher.closeWrite()
        let replies = try publisher.readUntilClosed()
        #expect(replies == Array(repeating: "+OK 0", count: 50))
        let reader = try rig.nodes[0].client(timeout: 15)
        #expect(try reader.command("PUB h.closed after") == "+OK 0")
        #expect(try rig.shards[0].cli("GET", "fanout:{h.closed}:seq").hasSuffix(" 51"))
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

    private func evalshaCalls(_ rig: ClusterRig) throws -> Int {
        let stats = try rig.shards[0].cli("INFO", "commandstats")
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_evalsha:") }),
              let calls = line.split(separator: ",").first?.split(separator: "=").last, let count = Int(calls) else {
            return 0
        }
        return count
    }
}
