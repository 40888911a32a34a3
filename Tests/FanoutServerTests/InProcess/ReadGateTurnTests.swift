@testable import FanoutServer
import Testing

extension InProcess {
    /// The read gate, seen from the peers: a client that does not read its replies stops being read, one that floods
    /// takes turns with the others, a held publisher waits while everyone else is served, and no stop loses or
    /// reorders a command.
    @Suite("In-process read gate", .timeLimit(.minutes(1)))
    struct ReadGateTurnTests {
        @Test func aClientThatDoesNotReadItsRepliesStopsBeingRead() throws {
            let harness = try ServerHarness()
            let mark = harness.server.configuration.limits.readPauseBytes
            let deaf = try harness.connect(sendBuffer: 4096)
            let observer = try harness.connect()
            deaf.isReading = false
            let text = String(repeating: "e", count: 90)
            let count = 30_000
            deaf.send((1...count).map { "PING \($0) \(text)\n" }.joined())
            try harness.run(until: { try harness.pendingBytes(of: deaf, asking: observer) >= mark },
                            "the replies to reach the pause mark")
            let readSoFar = harness.server.stats.bytesIn
            for _ in 0..<20 { harness.step(waitingAtMost: .milliseconds(1)) }
            let pending = try harness.pendingBytes(of: deaf, asking: observer)
            #expect(harness.server.stats.bytesIn - readSoFar < 1024, "its commands are no longer read")
            #expect(pending < mark + 256 * 1024, "its queued replies stop near the mark: \(pending)")
            #expect(deaf.unsentCount > 0, "the rest waits in the client")
            deaf.isReading = true
            var next = 1
            try harness.run(until: {
                while let line = deaf.takeLine() {
                    guard line == "+PONG \(next) \(text)" else { throw HarnessError.unexpected("+PONG \(next)", line) }
                    next += 1
                }
                return next > count
            }, "every reply, in order")
        }

        @Test func aFloodingClientTakesTurnsWithTheOthers() throws {
            let harness = try ServerHarness()
            let flooders = try (0..<3).map { _ in try harness.connect() }
            let bystander = try harness.connect()
            let count = 100_000
            for flooder in flooders { flooder.send((1...count).map { "PUB nobody.\($0 % 7) x\n" }.joined()) }
            for round in 1...5 {
                #expect(try harness.command("PING \(round)", on: bystander) == "+PONG \(round)")
                let answered = flooders.map { $0.inbox.count }.reduce(0, +)
                #expect(answered < 3 * count, "answered between the floods' turns: \(answered) of \(3 * count) done")
            }
            var replies = [0, 0, 0]
            try harness.run(until: {
                for (index, flooder) in flooders.enumerated() {
                    while let reply = flooder.takeReply() {
                        #expect(reply == "+OK 0")
                        replies[index] += 1
                    }
                }
                return replies == [count, count, count]
            }, timeout: .seconds(40), "every flood's replies")
        }

        @Test func commandsSplitAcrossTurnsKeepTheirOrder() throws {
            let harness = try ServerHarness()
            let peer = try harness.connect()
            let count = 50_000
            peer.send((1...count).map { "PING \($0)\n" }.joined())
            var next = 1
            try harness.run(until: {
                while let line = peer.takeLine() {
                    guard line == "+PONG \(next)" else { throw HarnessError.unexpected("+PONG \(next)", line) }
                    next += 1
                }
                return next > count
            }, "every reply, in order")
        }

        @Test func aHeldPublisherWaitsWhileOthersPublish() throws {
            let harness = try ServerHarness {
                $0.limits.maxPendingBytes = 4 << 20
                $0.limits.backpressureBytes = 64 * 1024
            }
            let lagging = try harness.laggingSubscriber(to: "slow")
            let other = try harness.connect()
            #expect(try harness.command("SUB fast", on: other) == "+OK 1")
            let held = try harness.connect()
            let free = try harness.connect()
            let filler = String(repeating: "s", count: 1000)
            let count = 1000
            held.send((1...count).map { "PUB slow \($0) \(filler)\n" }.joined() + "PING last\n")
            try harness.run(until: { harness.server.stats.backpressurePauses > 0 }, "the publisher to be held")
            for number in 1...5 { #expect(try harness.command("PUB fast \(number)", on: free) == "+OK 1") }
            #expect(try harness.linesBeforeFence(of: other) == (1...5).map { "MSG fast \($0) \($0)" })
            lagging.isReading = true
            var replies: [String] = []
            try harness.run(until: {
                while let reply = held.takeReply() { replies.append(reply) }
                return replies.count == count + 1
            }, "the held publisher's replies")
            #expect(replies.dropLast().allSatisfy { $0 == "+OK 1" } && replies.last == "+PONG last",
                    "its commands ran in order once released")
        }
    }
}
