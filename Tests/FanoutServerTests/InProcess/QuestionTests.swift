@testable import FanoutServer
import Testing

extension InProcess {
    /// Questions, seen from the asker and the receivers: `DONE` exactly once, after every `ANSWER`, at the timeout,
    /// when every receiver answered or left, or at the answer cap; and nothing left open when the asker goes.
    @Suite("In-process questions", .timeLimit(.minutes(1)))
    struct QuestionTests {
        /// Puts a question and returns its id, checking the count of receivers asked.
        static func ask(_ line: String, on asker: HarnessPeer, harness: ServerHarness, asked: Int) throws -> String {
            let reply = try harness.command(line, on: asker)
            let fields = reply.split(separator: " ")
            #expect(fields.count == 3 && fields[0] == "+OK" && fields[2] == "\(asked)", "reply to \(line): \(reply)")
            return fields.count == 3 ? String(fields[1]) : ""
        }

        static func receivers(_ count: Int, of subject: String, on harness: ServerHarness) throws -> [HarnessPeer] {
            let peers = try (0..<count).map { _ in try harness.connect() }
            for peer in peers { #expect(try harness.command("SUB \(subject)", on: peer) == "+OK 1") }
            return peers
        }

        @Test func doneComesAtTheTimeout() throws {
            let harness = try ServerHarness()
            let receivers = try Self.receivers(2, of: "svc", on: harness)
            let asker = try harness.connect()
            let start = ContinuousClock.now
            let id = try Self.ask("ASK svc 200 0 anyone?", on: asker, harness: harness, asked: 2)
            for receiver in receivers { #expect(try harness.nextLine(of: receiver) == "ASK svc \(id) anyone?") }
            let done = try harness.nextLine(of: asker)
            #expect(done == "DONE \(id) asked=2 answered=0 gone=0")
            // Not before the timeout, as libevent's timers see time: CLOCK_MONOTONIC_COARSE, a tick of up to 4 ms.
            #expect(ContinuousClock.now - start >= .milliseconds(195), "not before the timeout")
            #expect(harness.server.stats.askTimeouts == 1)
            #expect(try harness.command("ANSWER \(id) late", on: receivers[0]) == "+OK 0", "a late answer is not taken")
        }

        @Test func doneFollowsTheLastAnswerAtOnce() throws {
            let harness = try ServerHarness()
            let receivers = try Self.receivers(2, of: "svc", on: harness)
            let asker = try harness.connect()
            let id = try Self.ask("ASK svc 60000 0 q", on: asker, harness: harness, asked: 2)
            for (number, receiver) in receivers.enumerated() {
                #expect(try harness.nextLine(of: receiver) == "ASK svc \(id) q")
                #expect(try harness.command("ANSWER \(id) a\(number)", on: receiver) == "+OK 1")
                #expect(try harness.command("ANSWER \(id) again", on: receiver) == "+OK 0", "one answer per receiver")
            }
            let lines = try (0..<3).map { _ in try harness.nextLine(of: asker, timeout: .seconds(5)) }
            #expect(lines == ["ANSWER \(id) \(receivers[0].id) a0", "ANSWER \(id) \(receivers[1].id) a1",
                              "DONE \(id) asked=2 answered=2 gone=0"])
            #expect(harness.server.stats.askTimeouts == 0)
        }

        @Test func aReceiverThatLeavesIsCountedGoneAndNotWaitedFor() throws {
            let harness = try ServerHarness()
            let receivers = try Self.receivers(2, of: "svc", on: harness)
            let asker = try harness.connect()
            let id = try Self.ask("ASK svc 60000 0 q", on: asker, harness: harness, asked: 2)
            #expect(try harness.nextLine(of: receivers[0]) == "ASK svc \(id) q")
            #expect(try harness.command("ANSWER \(id) yes", on: receivers[0]) == "+OK 1")
            receivers[1].close()
            let lines = try (0..<2).map { _ in try harness.nextLine(of: asker, timeout: .seconds(5)) }
            #expect(lines == ["ANSWER \(id) \(receivers[0].id) yes", "DONE \(id) asked=2 answered=1 gone=1"])
        }

        @Test func anAskerThatLeavesClosesItsQuestion() throws {
            let harness = try ServerHarness()
            let receivers = try Self.receivers(1, of: "svc", on: harness)
            let asker = try harness.connect()
            let id = try Self.ask("ASK svc 60000 0 q", on: asker, harness: harness, asked: 1)
            #expect(try harness.nextLine(of: receivers[0]) == "ASK svc \(id) q")
            asker.close()
            try harness.run(until: { !harness.isConnected(asker) }, "the asker's departure")
            #expect(try harness.command("ANSWER \(id) too-late", on: receivers[0]) == "+OK 0")
            #expect(harness.server.stats.answers == 0)
        }

        @Test func theAnswerCapClosesTheQuestion() throws {
            let harness = try ServerHarness()
            let receivers = try Self.receivers(3, of: "svc", on: harness)
            let asker = try harness.connect()
            let id = try Self.ask("ASK svc 60000 2 q", on: asker, harness: harness, asked: 3)
            for receiver in receivers { #expect(try harness.nextLine(of: receiver) == "ASK svc \(id) q") }
            #expect(try harness.command("ANSWER \(id) first", on: receivers[2]) == "+OK 1")
            #expect(try harness.command("ANSWER \(id) second", on: receivers[0]) == "+OK 1")
            #expect(try harness.command("ANSWER \(id) third", on: receivers[1]) == "+OK 0", "closed at the cap")
            let lines = try harness.linesBeforeFence(of: asker)
            #expect(lines == ["ANSWER \(id) \(receivers[2].id) first", "ANSWER \(id) \(receivers[0].id) second",
                              "DONE \(id) asked=3 answered=2 gone=0"])
        }

        @Test func aQuestionNobodyHearsIsDoneAtOnce() throws {
            let harness = try ServerHarness()
            let asker = try harness.connect()
            #expect(try harness.command("SUB lonely", on: asker) == "+OK 1")
            let id = try Self.ask("ASK lonely 60000 0 q", on: asker, harness: harness, asked: 0)
            #expect(try harness.linesBeforeFence(of: asker) == ["DONE \(id) asked=0 answered=0 gone=0"],
                    "the asker is never asked its own question")
        }

        @Test func theAskerIsLeftOutBeforeItsGroupChooses() throws {
            let harness = try ServerHarness()
            let asker = try harness.connect()
            let other = try harness.connect()
            for peer in [asker, other] { #expect(try harness.command("QSUB helpers help", on: peer) == "+OK 1") }
            for _ in 0..<3 {
                let id = try Self.ask("ASK help 60000 0 q", on: asker, harness: harness, asked: 1)
                #expect(try harness.nextLine(of: other) == "ASK help \(id) q")
                #expect(try harness.command("ANSWER \(id) ok", on: other) == "+OK 1")
                #expect(try harness.linesBeforeFence(of: asker) == ["ANSWER \(id) \(other.id) ok",
                                                                    "DONE \(id) asked=1 answered=1 gone=0"])
            }
        }

        @Test func openQuestionsPerConnectionAreCapped() throws {
            let harness = try ServerHarness { $0.limits.maxAsks = 2 }
            _ = try Self.receivers(1, of: "svc", on: harness)
            let asker = try harness.connect()
            _ = try Self.ask("ASK svc 60000 0 one", on: asker, harness: harness, asked: 1)
            _ = try Self.ask("ASK svc 60000 0 two", on: asker, harness: harness, asked: 1)
            #expect(try harness.command("ASK svc 60000 0 three", on: asker).hasPrefix("-ERR limit "))
        }
    }
}
