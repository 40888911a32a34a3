import Foundation
import Testing

/// What the client library sends and understands of protocol 1.2, checked line by line against a scripted
/// server: groups restored as groups after a reconnect, BMSG pushes, ASK with its ANSWER and DONE pushes, and
/// answering the ASK pushes put to it.
@Suite("Client wire exchanges of protocol 1.2", .threadPerTest, .timeLimit(.minutes(2)))
struct ClientProtocol12Tests {
    static let greeting = "+HELLO fanout/1 scripted auth=none epoch=e1\n"

    @Test func groupPatternsComeBackAsTheSameGroupAfterAReconnect() throws {
        let server = try ScriptedServer()
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(server.port)", "--format", "line", "--group", "g1",
                                  "jobs.x", "news.*"])
        let first = try server.accept()
        try first.send(Self.greeting)
        #expect(try first.readLine() == "QSUB g1 jobs.x news.*")
        try first.send("+OK 2\n")
        // A member's share of a subject skips seqs by design: no gap report.
        try first.send("MSG jobs.x 5 a\nMSG jobs.x 9 b\n")
        _ = try sub.stdout.waitForLine(containing: "MSG jobs.x 9 b", timeout: 10)
        first.reset()

        let second = try server.accept()
        try second.send(Self.greeting)
        #expect(try second.readLine() == "QSUB g1 jobs.x news.*", "restored in its group, not with RESUME or SUB")
        try second.send("+OK 2\n")
        _ = try sub.stderr.waitForLine(containing: "resubscribed to 2 subjects", timeout: 10)
        try second.send("BMSG jobs.x 12 5\nx\n\u{0}y\n\nMSG news.uk 3 after\n")
        _ = try sub.stdout.waitForLine(containing: "MSG news.uk 3 after", timeout: 10)
        #expect(sub.stdout.all == ["MSG jobs.x 5 a", "MSG jobs.x 9 b", "BMSG jobs.x 12 5", "x", "\u{0}y", "",
                                  "MSG news.uk 3 after"], "a BMSG push as sent: header, the 5 bytes, LF")
        #expect(!sub.stderr.all.contains { $0.contains("gap on") || $0.contains("missed") }, "\(sub.stderr.all)")
    }

    @Test func askSendsTheQuestionAndPrintsEachAnswerThenTheSummary() throws {
        let server = try ScriptedServer()
        let ask = try FanoutTool(["ask", "--server", "127.0.0.1:\(server.port)", "--timeout", "750", "--max", "2",
                                  "svc.time", "what time is it?"])
        let connection = try server.accept()
        try connection.send(Self.greeting)
        #expect(try connection.readLine() == "ASK svc.time 750 2 what time is it?")
        try connection.send("+OK k1 3\nANSWER k1 7 noon\n")
        _ = try ask.stdout.waitForLine(containing: "7 noon", timeout: 10)
        try connection.send("ANSWER k1 n2/8 twelve  o'clock \nDONE k1 asked=3 answered=2 gone=1\n")
        let result = ask.finish()
        #expect(result.status == 0)
        #expect(result.stdout == ["7 noon", "n2/8 twelve  o'clock "], "payloads unchanged, responders as sent")
        #expect(result.stderr == ["fanout: 2 of 3 answered, 1 gone"])
    }

    @Test func aQuestionCutOffByALostConnectionFails() throws {
        let server = try ScriptedServer()
        let ask = try FanoutTool(["ask", "--server", "127.0.0.1:\(server.port)", "svc", "q"])
        let connection = try server.accept()
        try connection.send(Self.greeting)
        _ = try connection.readLine()
        try connection.send("+OK k1 2\nANSWER k1 7 one\n")
        _ = try ask.stdout.waitForLine(containing: "7 one", timeout: 10)
        connection.reset()
        let result = ask.finish()
        #expect(result.status == 2)
        #expect(result.stderr.first?.hasPrefix("fanout: connection lost") == true, "\(result.stderr)")
    }

    @Test func answerRunsTheCommandForAnAskPushAndSendsItsOutput() throws {
        let server = try ScriptedServer()
        let answer = try FanoutTool(["answer", "--server", "127.0.0.1:\(server.port)", "--count", "1", "svc.*",
                                     "--", "tr", "a-z", "A-Z"])
        let connection = try server.accept()
        try connection.send(Self.greeting)
        #expect(try connection.readLine() == "SUB svc.*")
        try connection.send("+OK 1\nASK svc.upper q9 hello  world\n")
        #expect(try connection.readLine() == "ANSWER q9 HELLO  WORLD", "stdout less its final LF is the answer")
        try connection.send("+OK 1\n")
        let result = answer.finish()
        #expect(result.status == 0, "--count 1 exits after one answer taken")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }
}
