import Foundation
import Testing

/// Question timers are reused from question to question: a reused one closes its new question at the new
/// question's timeout, never at the old one's.
@Suite("Question deadlines", .threadPerTest, .timeLimit(.minutes(1)))
struct QuestionDeadlineTests {
    @Test func aReusedTimerKeepsTheNewTimeout() throws {
        let daemon = try Daemon()
        let responder = try daemon.client()
        #expect(try responder.command("SUB rpc.x") == "+OK 1")
        let asker = try daemon.client()
        // Closed by its answer, well before its 300 ms: its timer goes back to the spares.
        let quick = try asker.command("ASK rpc.x 300 1 a").split(separator: " ")[1]
        #expect(try responder.readLine() == "ASK rpc.x \(quick) a")
        #expect(try responder.command("ANSWER \(quick) ok") == "+OK 1")
        #expect(try asker.readLine().hasPrefix("ANSWER \(quick) "))
        #expect(try asker.readLine() == "DONE \(quick) asked=1 answered=1 gone=0")
        // The next question takes that timer, armed for 1500 ms: still open past the first one's 300.
        let started = Date()
        let slow = try asker.command("ASK rpc.x 1500 0 b").split(separator: " ")[1]
        #expect(try responder.readLine() == "ASK rpc.x \(slow) b")
        Thread.sleep(forTimeInterval: 0.6)
        #expect(try infoFields(responder.command("INFO"))["open_questions"] == "1")
        #expect(try asker.readLine() == "DONE \(slow) asked=1 answered=0 gone=0")
        #expect(Date().timeIntervalSince(started) >= 1.4)
        #expect(try responder.command("ANSWER \(slow) late") == "+OK 0")
        // Many questions in a row, each answered, then one that times out: every timer fired or disarmed once.
        for round in 0..<50 {
            let id = try asker.command("ASK rpc.x 200 1 r\(round)").split(separator: " ")[1]
            #expect(try responder.readLine() == "ASK rpc.x \(id) r\(round)")
            #expect(try responder.command("ANSWER \(id) ok") == "+OK 1")
            _ = try asker.readLine()
            #expect(try asker.readLine() == "DONE \(id) asked=1 answered=1 gone=0")
        }
        let last = try asker.command("ASK rpc.x 300 0 z").split(separator: " ")[1]
        #expect(try asker.readLine() == "DONE \(last) asked=1 answered=0 gone=0")
        let info = try infoFields(asker.command("INFO"))
        #expect(info["open_questions"] == "0" && info["ask_timeouts"] == "2", "\(info)")
    }

    /// An answer whose id writes the number with leading zeros is taken, and pushed with the id handed out.
    @Test func anAnswerIsPushedWithTheIdHandedOut() throws {
        let daemon = try Daemon()
        let responder = try daemon.client()
        #expect(try responder.command("SUB rpc.y") == "+OK 1")
        let asker = try daemon.client()
        let id = try asker.command("ASK rpc.y 5000 0 q").split(separator: " ")[1]
        _ = try responder.readLine()
        let parts = id.split(separator: ".")
        #expect(try responder.command("ANSWER \(parts[0]).00\(parts[1]) yes") == "+OK 1")
        let answer = try asker.readLine()
        #expect(answer.hasPrefix("ANSWER \(id) ") && answer.hasSuffix(" yes"), "\(answer)")
        #expect(try asker.readLine() == "DONE \(id) asked=1 answered=1 gone=0")
    }
}
