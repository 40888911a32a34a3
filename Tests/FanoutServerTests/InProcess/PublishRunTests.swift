@testable import FanoutServer
import Testing

extension InProcess {
    /// The publish run, seen from the peers: one PUB reaches every subscriber exactly once, in order, and a
    /// subscriber dropped in the middle of a run costs the others nothing.
    @Suite("In-process publish run", .timeLimit(.minutes(1)))
    struct PublishRunTests {
        @Test func onePublishReachesEverySubscriberOnce() throws {
            let harness = try ServerHarness()
            let subscribers = try (0..<50).map { _ in try harness.connect() }
            for subscriber in subscribers { #expect(try harness.command("SUB room.1", on: subscriber) == "+OK 1") }
            let publisher = try harness.connect()
            #expect(try harness.command("PUB room.1 hello there", on: publisher) == "+OK 50")
            for subscriber in subscribers {
                #expect(try harness.linesBeforeFence(of: subscriber) == ["MSG room.1 1 hello there"])
            }
            #expect(harness.server.stats.published == 1 && harness.server.stats.delivered == 50)
        }

        @Test func aBatchArrivesInOrderExactlyOnceAtEachSubscriber() throws {
            let harness = try ServerHarness()
            let subscribers = try (0..<3).map { _ in try harness.connect() }
            for subscriber in subscribers { #expect(try harness.command("SUB feed", on: subscriber) == "+OK 1") }
            let publisher = try harness.connect()
            let count = 500
            publisher.send((1...count).map { "PUB feed m\($0)\n" }.joined())
            var replies: [String] = []
            try harness.run(until: {
                while let reply = publisher.takeReply() { replies.append(reply) }
                return replies.count == count
            }, "every reply")
            #expect(replies.allSatisfy { $0 == "+OK 3" })
            let expected = (1...count).map { "MSG feed \($0) m\($0)" }
            for subscriber in subscribers { #expect(try harness.linesBeforeFence(of: subscriber) == expected) }
        }

        @Test func overlappingPatternsDeliverOnce() throws {
            let harness = try ServerHarness()
            let subscriber = try harness.connect()
            #expect(try harness.command("SUB a.b a.* a.> >", on: subscriber) == "+OK 4")
            let publisher = try harness.connect()
            #expect(try harness.command("PUB a.b one", on: publisher) == "+OK 1")
            #expect(try harness.command("PUB a.c two", on: publisher) == "+OK 1")
            #expect(try harness.linesBeforeFence(of: subscriber) == ["MSG a.b 1 one", "MSG a.c 1 two"])
        }

        @Test func thePublishersReplyComesBeforeItsOwnMessage() throws {
            let harness = try ServerHarness()
            let peer = try harness.connect()
            #expect(try harness.command("SUB echo", on: peer) == "+OK 1")
            peer.send("PUB echo 1\nPUB echo 2\n")
            let lines = try (0..<4).map { _ in try harness.nextLine(of: peer) }
            #expect(lines == ["+OK 1", "+OK 1", "MSG echo 1 1", "MSG echo 2 2"]
                    || lines == ["+OK 1", "MSG echo 1 1", "+OK 1", "MSG echo 2 2"])
            #expect(lines.first == "+OK 1", "the reply first")
        }

        @Test func aSubscriberDroppedDuringARunCostsTheOthersNothing() throws {
            // The limit is above what one pass queues to a reader (a publisher's read of 64 KiB fanned out) and far
            // below what the slow one is sent.
            let harness = try ServerHarness { $0.limits.maxPendingBytes = 256 * 1024 }
            let readers = try (0..<2).map { _ in try harness.connect() }
            let slow = try harness.connect(sendBuffer: 4096)
            for peer in readers + [slow] { #expect(try harness.command("SUB run", on: peer) == "+OK 1") }
            slow.isReading = false
            let publisher = try harness.connect()
            let count = 1000
            let filler = String(repeating: "p", count: 1000)
            publisher.send((1...count).map { "PUB run \($0) \(filler)\n" }.joined())
            var receivers = 0, replies = 0
            try harness.run(until: {
                while let reply = publisher.takeReply() {
                    replies += 1
                    receivers += Int(reply.dropFirst(4)) ?? 0
                }
                return replies == count
            }, "every reply")
            #expect(!harness.isConnected(slow) && harness.server.stats.slowConsumers == 1)
            #expect(readers.allSatisfy(harness.isConnected))
            #expect(receivers > 2 * count && receivers < 3 * count, "counted until it was dropped: \(receivers)")
            for reader in readers {
                let lines = try harness.linesBeforeFence(of: reader)
                #expect(lines == (1...count).map { "MSG run \($0) \($0) \(filler)" }, "every message, in order")
            }
            slow.isReading = true
            try harness.run(until: { slow.sawEnd }, "the slow peer's end of stream")
            let got = slow.takeAll()
            #expect(got.last?.hasPrefix("-ERR slow-consumer ") == true, "the farewell comes last: \(got.last ?? "")")
            let messages = got.dropLast()
            #expect(messages.count < receivers - 2 * count + 1, "it got no more than it was counted for")
            #expect(messages.enumerated().allSatisfy { $1.hasPrefix("MSG run \($0 + 1) ") }, "a prefix, in order")
        }
    }
}
