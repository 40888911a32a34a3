import FanoutProtocol
import Foundation
import Testing

/// Reads one pushed message, failing on anything else.
func readMessage(_ client: LineClient) throws -> (subject: String, seq: UInt64, payload: String) {
    let line = try client.readLine()
    guard case .message(let subject, let seq, let payload) = ServerLine.parse(line) else {
        throw TestFailure("expected a MSG line, got: \(line)")
    }
    return (subject, seq, String(decoding: payload, as: UTF8.self))
}

@Suite("Delivery", .threadPerTest, .timeLimit(.minutes(2)))
struct DeliveryTests {
    @Test func protocolExample() throws {
        let daemon = try Daemon()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        #expect(try subscriber.command("SUB news.*") == "+OK 1")
        #expect(try publisher.command("PUB news.uk hello world") == "+OK 1")
        #expect(try subscriber.readLine() == "MSG news.uk 1 hello world")
    }

    @Test func wildcardsAndSetSemantics() throws {
        let daemon = try Daemon()
        let overlapping = try daemon.client()
        let star = try daemon.client()
        let tail = try daemon.client()
        let publisher = try daemon.client()
        #expect(try overlapping.command("SUB news.uk news.* news.> >") == "+OK 4")
        #expect(try star.command("SUB news.*") == "+OK 1")
        #expect(try tail.command("SUB news.>") == "+OK 1")

        #expect(try publisher.command("PUB news.uk one") == "+OK 3")
        #expect(try publisher.command("PUB news.uk.london two") == "+OK 2")
        #expect(try publisher.command("PUB news three") == "+OK 1")
        #expect(try publisher.command("PUB news.uk four") == "+OK 3")

        // One copy per connection however many of its patterns match; seq per subject.
        #expect(try readMessage(overlapping) == ("news.uk", 1, "one"))
        #expect(try readMessage(overlapping) == ("news.uk.london", 1, "two"))
        #expect(try readMessage(overlapping) == ("news", 1, "three"))
        #expect(try readMessage(overlapping) == ("news.uk", 2, "four"))
        #expect(try readMessage(star) == ("news.uk", 1, "one"))
        #expect(try readMessage(star) == ("news.uk", 2, "four"))
        #expect(try readMessage(tail) == ("news.uk", 1, "one"))
        #expect(try readMessage(tail) == ("news.uk.london", 1, "two"))
        #expect(try readMessage(tail) == ("news.uk", 2, "four"))
    }

    @Test func payloadBytesArriveUnchanged() throws {
        let daemon = try Daemon()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        #expect(try subscriber.command("SUB raw") == "+OK 1")
        #expect(try publisher.command("PUB raw   spaced\tand\rcr ") == "+OK 1")
        #expect(try publisher.command("PUB raw ") == "+OK 1")
        #expect(try readMessage(subscriber).payload == "  spaced\tand\rcr ")
        #expect(try readMessage(subscriber).payload == "")
    }

    @Test func tenThousandPipelinedMessagesArriveInOrder() throws {
        let daemon = try Daemon()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        #expect(try subscriber.command("SUB orders") == "+OK 1")
        let count = 10_000
        var batch = ""
        for number in 1...count { batch += "PUB orders payload-\(number)\n" }
        try publisher.send(batch)
        for _ in 1...count { #expect(try publisher.readLine() == "+OK 1") }
        for number in 1...count {
            let message = try readMessage(subscriber)
            guard message.seq == UInt64(number), message.payload == "payload-\(number)" else {
                Issue.record("message \(number) arrived as \(message)")
                return
            }
        }
    }

    /// A client whose replies reach the pause mark stops being read; once those replies are written (here in
    /// one go, as the reader keeps up) it must be read again, or the rest of its commands would hang.
    @Test func aClientPausedOnItsOwnRepliesIsReadAgainOnceTheyAreWritten() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_PENDING_BYTES": "70000"])
        let client = try daemon.client()
        let count = 50_000
        try client.send(String(repeating: "PING\n", count: count))
        for number in 1...count {
            let reply = try client.readLine()
            guard reply == "+PONG" else {
                Issue.record("reply \(number) was \(reply)")
                return
            }
        }
        #expect(try client.command("PING done") == "+PONG done")
    }

    @Test func oneConnectionsOrderHoldsAcrossSubjectsInOneBatch() throws {
        let daemon = try Daemon()
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        #expect(try subscriber.command("SUB a b c") == "+OK 3")
        let pattern = ["a", "b", "a", "a", "c", "b", "a"]
        var batch = ""
        for round in 0..<200 {
            for (position, subject) in pattern.enumerated() { batch += "PUB \(subject) \(round)-\(position)\n" }
        }
        try publisher.send(batch)
        for _ in 0..<(200 * pattern.count) { _ = try publisher.readLine() }
        var seqs: [String: UInt64] = [:]
        for round in 0..<200 {
            for (position, subject) in pattern.enumerated() {
                let message = try readMessage(subscriber)
                #expect(message.subject == subject && message.payload == "\(round)-\(position)")
                #expect(message.seq == (seqs[subject] ?? 0) + 1, "seq is per subject and has no gaps")
                seqs[subject] = message.seq
            }
        }
    }

    @Test func aPublisherSubscribedToItsOwnSubjectGetsItsMessages() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        #expect(try client.command("SUB echo") == "+OK 1")
        try client.sendLine("PUB echo ping")
        var lines = [try client.readLine(), try client.readLine()]
        lines.sort()
        #expect(lines == ["+OK 1", "MSG echo 1 ping"])
    }

    @Test func sequenceNumbersSurviveSubscriberChurn() throws {
        let daemon = try Daemon()
        let publisher = try daemon.client()
        do {
            let first = try daemon.client()
            #expect(try first.command("SUB s") == "+OK 1")
            #expect(try publisher.command("PUB s one") == "+OK 1")
            #expect(try readMessage(first).seq == 1)
        }
        #expect(try publisher.command("PUB s unheard").hasPrefix("+OK "))
        let second = try daemon.client()
        #expect(try second.command("SUB s") == "+OK 1")
        #expect(try publisher.command("PUB s three") == "+OK 1")
        #expect(try readMessage(second).seq == 3, "seq keeps increasing for the subject")
    }
}
