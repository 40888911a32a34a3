@testable import FanoutServer
import Testing

extension InProcess {
    /// Group choice, seen from the members: each message to one member, spread over them, a busy member passed over
    /// while another is ready, a member that leaves never chosen again, and no message held back for a member.
    @Suite("In-process group choice", .timeLimit(.minutes(1)))
    struct GroupChoiceTests {
        /// The payloads of the `MSG` lines each member got before a fence, in order.
        static func payloads(of members: [HarnessPeer], on harness: ServerHarness) throws -> [[String]] {
            try members.map { member in
                try harness.linesBeforeFence(of: member).map { line in
                    let fields = line.split(separator: " ", maxSplits: 3)
                    return fields.count == 4 && fields[0] == "MSG" ? String(fields[3]) : "unexpected \(line)"
                }
            }
        }

        @Test func eachMessageGoesToOneMemberInOrder() throws {
            let harness = try ServerHarness()
            let members = try (0..<3).map { _ in try harness.connect() }
            for member in members { #expect(try harness.command("QSUB workers jobs", on: member) == "+OK 1") }
            let publisher = try harness.connect()
            let count = 300
            publisher.send((1...count).map { "PUB jobs j\($0)\n" }.joined())
            var replies: [String] = []
            try harness.run(until: {
                while let reply = publisher.takeReply() { replies.append(reply) }
                return replies.count == count
            }, "every reply")
            #expect(replies.allSatisfy { $0 == "+OK 1" }, "one member counted per message")
            let got = try Self.payloads(of: members, on: harness)
            #expect(got.flatMap { $0 }.sorted() == (1...count).map { "j\($0)" }.sorted(), "each message exactly once")
            for share in got {
                let numbers = share.compactMap { Int($0.dropFirst()) }
                #expect(numbers == numbers.sorted(), "a member sees an increasing subsequence")
                #expect(!share.isEmpty, "every member took a share")
            }
        }

        @Test func aBurstToAnIdleGroupReachesEveryMember() throws {
            let harness = try ServerHarness()
            let members = try (0..<4).map { _ in try harness.connect() }
            for member in members { #expect(try harness.command("QSUB burst b.*", on: member) == "+OK 1") }
            let publisher = try harness.connect()
            publisher.send((1...8).map { "PUB b.x \($0)\n" }.joined())
            try harness.run(until: { publisher.inbox.count == 8 }, "the replies")
            let got = try Self.payloads(of: members, on: harness)
            #expect(got.allSatisfy { !$0.isEmpty }, "spread message by message: \(got)")
            #expect(got.map(\.count).reduce(0, +) == 8)
        }

        @Test func aPlainReceiverAndAGroupMemberEachGetTheMessage() throws {
            let harness = try ServerHarness()
            let plain = try harness.connect()
            let member = try harness.connect()
            let both = try harness.connect()
            #expect(try harness.command("SUB orders", on: plain) == "+OK 1")
            #expect(try harness.command("QSUB shop orders", on: member) == "+OK 1")
            let publisher = try harness.connect()
            #expect(try harness.command("PUB orders one", on: publisher) == "+OK 2")
            #expect(try harness.linesBeforeFence(of: plain) == ["MSG orders 1 one"])
            #expect(try harness.linesBeforeFence(of: member) == ["MSG orders 1 one"])
            // A group whose choice already gets the message plainly counts as served: set semantics hold.
            #expect(try harness.command("QSUB solo orders.>", on: both) == "+OK 1")
            #expect(try harness.command("SUB orders.x", on: both) == "+OK 2")
            #expect(try harness.command("PUB orders.x two", on: publisher) == "+OK 1")
            #expect(try harness.linesBeforeFence(of: both) == ["MSG orders.x 1 two"])
        }

        @Test func aBusyMemberIsPassedOverWhileAnotherIsReady() throws {
            let harness = try ServerHarness { $0.limits.maxPendingBytes = 256 * 1024 }
            let stuck = try harness.connect(sendBuffer: 4096)
            let ready = try harness.connect()
            for member in [stuck, ready] { #expect(try harness.command("QSUB pool tasks", on: member) == "+OK 1") }
            stuck.isReading = false
            let publisher = try harness.connect()
            let filler = String(repeating: "g", count: 1000)
            let count = 2000
            publisher.send((1...count).map { "PUB tasks \($0)-\(filler)\n" }.joined())
            var replies = 0
            try harness.run(until: {
                while publisher.takeReply() != nil { replies += 1 }
                return replies == count
            }, "every reply")
            #expect(harness.isConnected(stuck) && harness.server.stats.slowConsumers == 0,
                    "a member that stopped reading is handed no more work, so it is never dropped")
            let got = try Self.payloads(of: [stuck, ready], on: harness)
            #expect(got[0].count + got[1].count == count, "every message reached one member")
            #expect(got[0].count < count / 4, "the stuck member took little: \(got[0].count)")
            #expect(got[0].count * 1000 < harness.server.configuration.limits.maxPendingBytes)
        }

        @Test func aMessageIsNeverHeldBackWhenEveryMemberIsBusy() throws {
            let harness = try ServerHarness { $0.limits.maxPendingBytes = 8 << 20 }
            let members = try (0..<2).map { _ in try harness.connect(sendBuffer: 4096) }
            for member in members {
                #expect(try harness.command("QSUB jammed q", on: member) == "+OK 1")
                member.isReading = false
            }
            let publisher = try harness.connect()
            let filler = String(repeating: "h", count: 1000)
            let count = 1000
            publisher.send((1...count).map { "PUB q \($0)-\(filler)\n" }.joined())
            var replies: [String] = []
            try harness.run(until: {
                while let reply = publisher.takeReply() { replies.append(reply) }
                return replies.count == count
            }, "every reply")
            #expect(replies.allSatisfy { $0 == "+OK 1" }, "each message still went to a member")
            let got = try Self.payloads(of: members, on: harness)
            #expect(got[0].count + got[1].count == count)
        }

        @Test func aMemberThatLeavesIsNotChosenAgain() throws {
            let harness = try ServerHarness()
            let leaving = try harness.connect()
            let staying = try harness.connect()
            for member in [leaving, staying] { #expect(try harness.command("QSUB crew c", on: member) == "+OK 1") }
            let publisher = try harness.connect()
            for number in 1...4 { #expect(try harness.command("PUB c before\(number)", on: publisher) == "+OK 1") }
            leaving.close()
            try harness.run(until: { !harness.isConnected(leaving) }, "the departure")
            for number in 1...20 { #expect(try harness.command("PUB c after\(number)", on: publisher) == "+OK 1") }
            let got = try harness.linesBeforeFence(of: staying).filter { $0.contains(" after") }
            #expect(got.count == 20, "every message after the departure went to the member left")
        }

        @Test func anUnsubscribedMemberLeavesTheGroup() throws {
            let harness = try ServerHarness()
            let quitting = try harness.connect()
            let staying = try harness.connect()
            for member in [quitting, staying] { #expect(try harness.command("QSUB crew c", on: member) == "+OK 1") }
            #expect(try harness.command("UNSUB c", on: quitting) == "+OK 0")
            let publisher = try harness.connect()
            for number in 1...10 { #expect(try harness.command("PUB c m\(number)", on: publisher) == "+OK 1") }
            #expect(try harness.linesBeforeFence(of: staying).count == 10)
            #expect(try harness.linesBeforeFence(of: quitting).isEmpty)
        }
    }
}
