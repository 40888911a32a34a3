import FanoutEngine
import FanoutRedis
@testable import FanoutRedisEngine
import Testing

/// A shard's batch of PUBs, without a server: grouping, bounds, the command, and how the reply is shared out.
struct PublishBatchTests {
    private let rule = Array("$1\r\n0\r\n$1\r\n0\r\n$5\r\n60000\r\n".utf8)

    /// Notes each outcome as `<ticket>:<receivers or failure>`.
    final class Outcomes: PublishReceipts {
        var noted: [String] = []

        func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {
            switch result {
            case .success(let receivers): noted.append("\(ticket):\(receivers)")
            case .failure(let failure): noted.append("\(ticket):\(failure)")
            }
        }
    }

    private func add(_ batch: PublishBatch, _ subject: String, _ payload: String, to outcomes: Outcomes = Outcomes(),
                     ticket: UInt64 = 0) {
        Array(subject.utf8).withUnsafeBytes { subjectBytes in
            Array(payload.utf8).withUnsafeBytes { payloadBytes in
                batch.add(subject: subjectBytes, hash: SubjectKeys.hash(subjectBytes), payload: payloadBytes,
                          rule: { rule }, receipts: outcomes, ticket: ticket)
            }
        }
    }

    /// The RESP array as its bulk strings (the command ends with hiredis's NUL).
    private func arguments(_ command: [UInt8]) throws -> [String] {
        #expect(command.last == 0)
        var index = 1
        func number() -> Int {
            var value = 0
            while command[index] != 13 {
                value = value * 10 + Int(command[index] - 48)
                index += 1
            }
            index += 2
            return value
        }
        let count = number()
        var found: [String] = []
        while command[index] == UInt8(ascii: "$") {
            index += 1
            let length = number()
            found.append(String(decoding: command[index..<(index + length)], as: UTF8.self))
            index += length + 2
        }
        #expect(index == command.count - 1, "nothing after the last argument")
        #expect(found.count == count, "the header counts every argument")
        return found
    }

    @Test func messagesAreGroupedBySubjectInFirstComeOrderAndKeepTheirOrder() throws {
        let batch = PublishBatch()
        add(batch, "a.b", "one")
        add(batch, "c.d", "x")
        add(batch, "a.b", "two")
        add(batch, "a.b", "")
        #expect(batch.messages == 4 && batch.groups.count == 2 && batch.bytes == 7)
        var command: [UInt8] = []
        batch.command(script: Array("sha".utf8), candidateEpoch: "cand", into: &command)
        let sent = try arguments(command)
        #expect(sent == ["EVALSHA", "sha", "6", "fanout:epoch", "fanout:numberings",
                         "fanout:{a.b}:seq", "fanout:{a.b}:log", "fanout:{c.d}:seq", "fanout:{c.d}:log", "cand",
                         "fanout:m:a.b", "3", "0", "0", "60000", "one", "two", "",
                         "fanout:m:c.d", "1", "0", "0", "60000", "x"])
    }

    /// A batch is reused once answered: after a reset it holds only what comes next.
    @Test func aResetBatchServesAgain() throws {
        let batch = PublishBatch()
        for index in 0..<40 { add(batch, "old.\(index)", "payload \(index)") }
        batch.reset()
        #expect(batch.isEmpty && batch.groups.isEmpty && batch.bytes == 0)
        add(batch, "new", "one")
        add(batch, "new", "two")
        var command: [UInt8] = []
        batch.command(script: Array("sha".utf8), candidateEpoch: "cand", into: &command)
        #expect(try arguments(command) == ["EVALSHA", "sha", "4", "fanout:epoch", "fanout:numberings",
                                           "fanout:{new}:seq", "fanout:{new}:log", "cand",
                                           "fanout:m:new", "2", "0", "0", "60000", "one", "two"])
    }

    /// The stated worst case: a batch is full at 256 messages, or at 64 KiB of payload.
    @Test func aBatchIsFullAtItsBounds() {
        let counted = PublishBatch()
        for index in 0..<(PublishBatch.maxMessages - 1) { add(counted, "s.\(index % 7)", "m") }
        #expect(!counted.isFull)
        add(counted, "s.0", "m")
        #expect(counted.isFull && counted.messages == 256)
        let sized = PublishBatch()
        let large = String(repeating: "p", count: 16 * 1024)
        for _ in 0..<3 { add(sized, "big", large) }
        #expect(!sized.isFull)
        add(sized, "big", large)
        #expect(sized.isFull && sized.messages == 4)
    }

    @Test func eachMessageGetsItsSubjectsReceiversOrTheFailure() {
        let batch = PublishBatch()
        let outcomes = Outcomes()
        for (ticket, subject) in ["a", "b", "a"].enumerated() { add(batch, subject, "m", to: outcomes, ticket: UInt64(ticket + 1)) }
        batch.answer(.success(.array([.integer(2), .integer(3)])))
        #expect(outcomes.noted == ["1:2", "2:3", "3:2"])
        outcomes.noted.removeAll()
        batch.answer(.success(.error("NOSCRIPT No matching script")))
        #expect(outcomes.noted.count == 3 && outcomes.noted.allSatisfy { $0.contains("redis: NOSCRIPT") })
        outcomes.noted.removeAll()
        batch.answer(.failure(.outcomeUnknown("connection lost")))
        #expect(outcomes.noted == ["1:outcome unknown: connection lost", "2:outcome unknown: connection lost",
                                   "3:outcome unknown: connection lost"])
    }
}
