@testable import FanoutServer
import Testing

extension InProcess {
    /// Backlog marks, seen from the peers: past `max_pending_bytes` a subscriber is dropped with its `-ERR` and leaves
    /// every set; with `backpressure_bytes` its publishers are held instead, and let go when it drains or goes.
    @Suite("In-process backlog marks", .timeLimit(.minutes(1)))
    struct BacklogTests {
        static let filler = String(repeating: "b", count: 1000)

        /// Publishes `count` messages to `subject` in one write and waits for every reply; returns the receivers counted.
        static func publish(_ count: Int, to subject: String, from publisher: HarnessPeer, on harness: ServerHarness,
                            first: Int = 1) throws -> [Int] {
            publisher.send((first..<first + count).map { "PUB \(subject) \($0) \(filler)\n" }.joined())
            var receivers: [Int] = []
            try harness.run(until: {
                while let reply = publisher.takeReply() { receivers.append(Int(reply.dropFirst(4)) ?? -1) }
                return receivers.count == count
            }, "\(count) replies")
            return receivers
        }

        @Test func aSlowConsumerGetsItsErrorAndLeavesEverySet() throws {
            let harness = try ServerHarness { $0.limits.maxPendingBytes = 64 * 1024 }
            let slow = try harness.connect(sendBuffer: 4096)
            #expect(try harness.command("SUB flood other.x wild.*", on: slow) == "+OK 3")
            #expect(try harness.command("QSUB team work", on: slow) == "+OK 4")
            slow.isReading = false
            let publisher = try harness.connect()
            _ = try Self.publish(200, to: "flood", from: publisher, on: harness)
            #expect(!harness.isConnected(slow))
            #expect(harness.server.stats.slowConsumers == 1)
            for subject in ["flood", "other.x", "wild.card", "work"] {
                #expect(try harness.command("PUB \(subject) after", on: publisher) == "+OK 0", "\(subject) lost it")
            }
            slow.isReading = true
            try harness.run(until: { slow.sawEnd }, "the end of stream")
            let farewell = try #require(slow.takeAll().last)
            #expect(farewell.hasPrefix("-ERR slow-consumer ") && farewell.contains("max_pending_bytes=65536"))
        }

        @Test func aSubscriberUnderTheLimitIsKept() throws {
            let harness = try ServerHarness { $0.limits.maxPendingBytes = 1 << 20 }
            let lagging = try harness.laggingSubscriber(to: "lag")
            let publisher = try harness.connect()
            let receivers = try Self.publish(200, to: "lag", from: publisher, on: harness)
            #expect(receivers.allSatisfy { $0 == 1 })
            #expect(harness.isConnected(lagging) && harness.server.stats.slowConsumers == 0)
            let lines = try harness.linesBeforeFence(of: lagging)
            #expect(lines == (1...200).map { "MSG lag \($0) \($0) \(Self.filler)" })
        }

        @Test func backpressureHoldsThePublisherAndReleasesItOnDrain() throws {
            let harness = try ServerHarness {
                $0.limits.maxPendingBytes = 4 << 20
                $0.limits.backpressureBytes = 64 * 1024
            }
            let lagging = try harness.laggingSubscriber(to: "held")
            let publisher = try harness.connect()
            let bystander = try harness.connect()
            let count = 2000
            publisher.send((1...count).map { "PUB held \($0) \(Self.filler)\n" }.joined())
            try harness.run(until: { harness.server.stats.backpressurePauses > 0 }, "the publisher to be held")
            #expect(harness.server.stats.published < UInt64(count), "publishing paused part-way")
            // Held, it stays held while its subscriber does not read: other clients are served meanwhile.
            #expect(try harness.command("PING still", on: bystander) == "+PONG still")
            let published = harness.server.stats.published
            for _ in 0..<20 { harness.step(waitingAtMost: .milliseconds(1)) }
            #expect(harness.server.stats.published == published, "nothing of the held publisher was read")
            #expect(harness.server.stats.slowConsumers == 0)
            lagging.isReading = true
            var replies = 0
            try harness.run(until: {
                while publisher.takeReply() != nil { replies += 1 }
                return replies == count
            }, "every reply")
            let lines = try harness.linesBeforeFence(of: lagging)
            #expect(lines == (1...count).map { "MSG held \($0) \($0) \(Self.filler)" }, "nothing lost, in order")
            #expect(harness.server.stats.slowConsumers == 0)
        }

        @Test func aHeldPublisherIsReleasedWhenItsSubscriberGoes() throws {
            let harness = try ServerHarness {
                $0.limits.maxPendingBytes = 4 << 20
                $0.limits.backpressureBytes = 64 * 1024
            }
            let lagging = try harness.laggingSubscriber(to: "gone")
            let publisher = try harness.connect()
            let count = 1000
            publisher.send((1...count).map { "PUB gone \($0) \(Self.filler)\n" }.joined())
            try harness.run(until: { harness.server.stats.backpressurePauses > 0 }, "the publisher to be held")
            lagging.close()
            var replies: [String] = []
            try harness.run(until: {
                while let reply = publisher.takeReply() { replies.append(reply) }
                return replies.count == count
            }, "every reply after the subscriber left")
            #expect(replies.last == "+OK 0", "the last messages had no receiver left")
            #expect(harness.server.stats.published == UInt64(count))
        }

        @Test func aBacklogPastTheWatchMarkIsDroppedUnderTheMemoryBound() throws {
            let harness = try ServerHarness {
                $0.limits.maxPendingBytes = 8 << 20
                $0.limits.maxMemory = 2 << 20
            }
            let hoarder = try harness.connect(sendBuffer: 4096)
            let reader = try harness.connect()
            for peer in [hoarder, reader] { #expect(try harness.command("SUB big", on: peer) == "+OK 1") }
            hoarder.isReading = false
            let publisher = try harness.connect()
            _ = try Self.publish(3000, to: "big", from: publisher, on: harness)
            #expect(!harness.isConnected(hoarder), "the largest backlog went when memory ran over")
            #expect(harness.isConnected(reader), "a reader that keeps up stays")
            #expect(harness.server.stats.slowConsumers == 1)
            hoarder.isReading = true
            try harness.run(until: { hoarder.sawEnd }, "the end of stream")
            let farewell = try #require(hoarder.takeAll().last)
            #expect(farewell.hasPrefix("-ERR slow-consumer ") && farewell.contains("over max_memory=2097152"))
        }
    }
}
