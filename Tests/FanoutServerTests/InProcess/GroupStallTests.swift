@testable import FanoutServer
import Testing

extension InProcess {
    /// A group's order of choice when no member is ready: busy members first, and a member found stalled (busy while
    /// others came back from busy) only when nobody else is left, so that a member that stopped reading is handed
    /// no more work while the others can take it.
    @Suite("In-process group stalls", .timeLimit(.minutes(1)))
    struct GroupStallTests {
        static let filler = String(repeating: "s", count: 1000)

        /// Publishes `count` messages to `subject`, each to one member, and waits for every reply.
        static func publish(_ count: Int, from publisher: HarnessPeer, on harness: ServerHarness) throws {
            publisher.send((1...count).map { "PUB stall.q \($0)-\(filler)\n" }.joined())
            var replies = 0
            try harness.run(until: {
                while let reply = publisher.takeReply() {
                    #expect(reply == "+OK 1")
                    replies += 1
                }
                return replies == count
            }, "\(count) replies")
        }

        @Test func aStalledMemberIsChosenAfterTheBusyOnes() throws {
            let harness = try ServerHarness { $0.limits.maxPendingBytes = 16 << 20 }
            let stuck = try harness.connect(sendBuffer: 4096)
            let others = try (0..<2).map { _ in try harness.connect(sendBuffer: 4096) }
            for member in [stuck] + others { #expect(try harness.command("QSUB pool stall.q", on: member) == "+OK 1") }
            let publisher = try harness.connect()
            let observer = try harness.connect()
            func pending(_ peer: HarnessPeer) throws -> Int {
                try harness.pendingBytes(of: peer, asking: observer)
            }
            // The stuck member stops reading for good and turns busy while the others read.
            stuck.isReading = false
            try harness.run(until: {
                try Self.publish(20, from: publisher, on: harness)
                return try pending(stuck) > 0
            }, "the stuck member to hold output the kernel refused")
            // A member is found busy when a pick looks at it: one more batch does.
            try Self.publish(20, from: publisher, on: harness)
            // The others turn busy too, then drain: two comebacks while the stuck one stays busy make it stalled.
            for member in others { member.isReading = false }
            try harness.run(until: {
                try Self.publish(20, from: publisher, on: harness)
                return try others.allSatisfy { try pending($0) > 0 }
            }, "every other member to turn busy")
            try Self.publish(20, from: publisher, on: harness)
            for member in others { member.isReading = true }
            try harness.run(until: { try others.allSatisfy { try pending($0) == 0 } }, "the others to drain")
            // The others stop again: they take the work while ready and then while busy, the stalled one none.
            for member in others { member.isReading = false }
            let stuckHeld = try pending(stuck)
            let othersHeld = try others.map(pending)
            try Self.publish(200, from: publisher, on: harness)
            #expect(try pending(stuck) == stuckHeld, "the stalled member was handed nothing")
            #expect(try zip(others.map(pending), othersHeld).allSatisfy { $0 > $1 }, "the busy members took it all")
            // Each message went to exactly one member, none was lost on the way.
            var delivered = 0
            for member in [stuck] + others { delivered += try harness.linesBeforeFence(of: member).count }
            #expect(UInt64(delivered) == harness.server.stats.published)
            #expect(harness.server.stats.slowConsumers == 0)
        }
    }
}
