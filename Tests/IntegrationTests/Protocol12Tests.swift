import Foundation
import Testing

/// PROTOCOL.md's 1.2 sections against a real fanoutd: groups, questions and any bytes, over TCP, the system's
/// nc, WebSocket (websocket_checks.py), event streams and POST /publish.
@Suite("Protocol 1.2", .threadPerTest, .timeLimit(.minutes(2)))
struct Protocol12Tests {
    static let http = ["--http-listen", "127.0.0.1:0"]

    /// Each message of a group's subject goes to exactly one member (across the patterns the group holds),
    /// spread over them; a plain subscriber gets every one; `+OK` counts one connection per group.
    @Test func aGroupSharesItsMessages() throws {
        let daemon = try Daemon()
        let members = try (0..<3).map { _ in try daemon.client() }
        for (index, member) in members.enumerated() {
            #expect(try member.command("QSUB workers " + (index == 2 ? "jobs.>" : "jobs.*")) == "+OK 1")
        }
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB jobs.run") == "+OK 1")
        let publisher = try daemon.client()
        for number in 1...30 {
            #expect(try publisher.command("PUB jobs.run job-\(number)") == "+OK 2")
        }
        var seen = Set<String>()
        for member in members {
            let lines = try member.pushes(beforeFence: "fence")
            #expect(!lines.isEmpty, "every member takes a share")
            for line in lines { #expect(seen.insert(line).inserted, "\(line) went to one member only") }
        }
        #expect(seen.count == 30)
        #expect(try watcher.pushes(beforeFence: "fence").count == 30)
        #expect(try infoFields(publisher.command("INFO"))["groups"] == "2", "one member set per group and pattern")
        #expect(try publisher.command("CHANNELS jobs.*").contains(" jobs.*=2"), "group members count as subscribers")
    }

    /// A burst of jobs, pipelined in one write, is spread over the members message by message: none is left
    /// idle while another takes the whole burst, and each job goes to one member.
    @Test func aBurstIsSpreadOverEveryMember() throws {
        let daemon = try Daemon()
        let members = try (0..<3).map { _ in try daemon.client() }
        for member in members { #expect(try member.command("QSUB g burst.x") == "+OK 1") }
        let publisher = try daemon.client()
        let count = 60
        try publisher.send((1...count).map { "PUB burst.x job-\($0)\n" }.joined() + "PING done\n")
        for _ in 1...count { #expect(try publisher.readLine() == "+OK 1") }
        #expect(try publisher.readLine() == "+PONG done")
        var owner: [UInt64: Int] = [:]
        for (index, member) in members.enumerated() {
            let seqs = try member.pushes(beforeFence: "f").compactMap { UInt64($0.split(separator: " ")[2]) }
            #expect(seqs == seqs.sorted(), "a member sees an increasing subsequence")
            #expect(seqs.count >= count / 6, "member \(index) took \(seqs.count) of \(count)")
            for seq in seqs { #expect(owner.updateValue(index, forKey: seq) == nil, "seq \(seq) went to one member") }
        }
        #expect(owner.count == count)
        #expect(try infoFields(publisher.command("INFO"))["group_paced_runs"] == "0", "an idle group is not paced")
    }

    /// A member that vanished is never chosen: every message still reaches a live member.
    @Test func aVanishedMemberIsNeverChosen() throws {
        let daemon = try Daemon()
        let staying = try daemon.client()
        let leaving = try daemon.client()
        #expect(try staying.command("QSUB g tasks.x") == "+OK 1")
        #expect(try leaving.command("QSUB g tasks.x") == "+OK 1")
        leaving.close()
        let publisher = try daemon.client()
        try eventually("the member has gone") { try infoFields(publisher.command("INFO"))["clients"] == "2" }
        for number in 1...10 { #expect(try publisher.command("PUB tasks.x \(number)") == "+OK 1") }
        #expect(try staying.pushes(beforeFence: "f") == (1...10).map { "MSG tasks.x \($0) \($0)" })
    }

    /// A pattern is held once, plainly or in one group: QSUB and SUB move it, UNSUB drops it whatever its mode;
    /// RESUME makes it plain. Bad group names and missing subjects are syntax errors.
    @Test func aPatternMovesBetweenModes() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        #expect(try client.command("SUB m.a") == "+OK 1")
        #expect(try client.command("QSUB g1 m.a m.b") == "+OK 2")
        #expect(try client.command("QSUB g2 m.a") == "+OK 2")
        #expect(try client.command("SUB m.a") == "+OK 2")
        let other = try daemon.client()
        #expect(try other.command("PUB m.a x") == "+OK 1")
        #expect(try other.command("PUB m.b y") == "+OK 1")
        #expect(try client.pushes(beforeFence: "f") == ["MSG m.a 1 x", "MSG m.b 1 y"])
        #expect(try client.command("RESUME m.b").hasPrefix("+OK 2 "))
        #expect(try infoFields(other.command("INFO"))["groups"] == "0")
        #expect(try client.command("UNSUB m.a") == "+OK 1")
        #expect(try client.command("QSUB bad!name m.c").hasPrefix("-ERR syntax"))
        #expect(try client.command("QSUB " + String(repeating: "g", count: 65) + " m.c").hasPrefix("-ERR syntax"))
        #expect(try client.command("QSUB g").hasPrefix("-ERR syntax"))
        #expect(try client.command("QSUB g a..b").hasPrefix("-ERR bad-subject"))
    }

    /// ASK reaches every receiver but the asker; answers come back with their responder; a responder that
    /// vanishes counts as gone at once, so the asker never waits out the timeout for it.
    @Test func questionsGatherAnswersAndNeverWaitForTheGone() throws {
        let daemon = try Daemon()
        let first = try daemon.client()
        let second = try daemon.client()
        let asker = try daemon.client()
        for client in [first, second, asker] { #expect(try client.command("SUB svc.health") == "+OK 1") }
        let started = Date()
        let reply = try asker.command("ASK svc.health 10000 0 are you ok?")
        let words = reply.split(separator: " ")
        #expect(words.count == 3 && words[0] == "+OK" && words[2] == "2", "asked two, not the asker: \(reply)")
        let id = String(words[1])
        #expect(try first.readLine() == "ASK svc.health \(id) are you ok?")
        #expect(try second.readLine() == "ASK svc.health \(id) are you ok?")
        #expect(try first.command("ANSWER \(id) fine, thanks") == "+OK 1")
        #expect(try first.command("ANSWER \(id) again") == "+OK 0", "one answer per connection")
        let answer = try asker.readLine()
        #expect(answer.hasPrefix("ANSWER \(id) ") && answer.hasSuffix(" fine, thanks"), "\(answer)")
        second.close()
        #expect(try asker.readLine() == "DONE \(id) asked=2 answered=1 gone=1")
        #expect(Date().timeIntervalSince(started) < 5, "the gone responder is not waited for")
        #expect(try first.command("ANSWER \(id) late") == "+OK 0")
        let info = try infoFields(asker.command("INFO"))
        #expect(info["open_questions"] == "0" && info["answers"] == "1" && info["questions"] == "1", "\(info)")
    }

    /// The cap of answers, the timeout, a question nobody receives, a group's one member, and the errors.
    @Test func questionsCloseByCapTimeoutAndEmptiness() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_ASKS": "2", "FANOUTD_MAX_ASK_TIMEOUT": "5000"])
        let responders = try (0..<2).map { _ in try daemon.client() }
        for responder in responders { #expect(try responder.command("SUB calc.add") == "+OK 1") }
        let asker = try daemon.client()
        let capped = try asker.command("ASK calc.add 4000 1 1 2").split(separator: " ")[1]
        _ = try responders[0].readLine()
        _ = try responders[1].readLine()
        #expect(try responders[1].command("ANSWER \(capped) 3") == "+OK 1")
        #expect(try asker.readLine().hasPrefix("ANSWER \(capped) "))
        #expect(try asker.readLine() == "DONE \(capped) asked=2 answered=1 gone=0")
        #expect(try responders[0].command("ANSWER \(capped) 3") == "+OK 0", "closed by its cap")

        let started = Date()
        let timed = try asker.command("ASK calc.add 300 0 x").split(separator: " ")[1]
        #expect(try asker.readLine() == "DONE \(timed) asked=2 answered=0 gone=0")
        #expect(Date().timeIntervalSince(started) >= 0.25)

        let nobody = try asker.command("ASK nobody.home 1000 0 x").split(separator: " ")
        #expect(nobody[2] == "0")
        #expect(try asker.readLine() == "DONE \(nobody[1]) asked=0 answered=0 gone=0")

        #expect(try asker.command("ASK calc.* 100 0 x").hasPrefix("-ERR bad-subject"))
        #expect(try asker.command("ASK calc.add 0 0 x").hasPrefix("-ERR syntax"))
        #expect(try asker.command("ASK calc.add ten 0 x").hasPrefix("-ERR syntax"))
        #expect(try asker.command("ASK calc.add 5001 0 x").hasPrefix("-ERR limit"))
        #expect(try asker.command("ANSWER bad!id x").hasPrefix("-ERR syntax"))
        #expect(try asker.command("ANSWER never.1 x") == "+OK 0")
        // max_asks=2: a third open question is refused.
        _ = try asker.command("ASK calc.add 5000 0 a")
        _ = try asker.command("ASK calc.add 5000 0 b")
        #expect(try asker.command("ASK calc.add 5000 0 c").hasPrefix("-ERR limit"))
        // The asker vanishes: its questions close, and answers to them are late.
        let put = try responders[0].pushes(beforeFence: "f")
        let pending = try #require(put.last { $0.hasSuffix(" a") }).split(separator: " ")[2]
        asker.close()
        try eventually("the asker's questions closed") {
            try infoFields(responders[1].command("INFO"))["open_questions"] == "0"
        }
        #expect(try responders[0].command("ANSWER \(pending) late") == "+OK 0")
    }

    /// A group answers a question with one member, never the asker, even when the asker is a member.
    @Test func aGroupAnswersWithOneMemberNeverTheAsker() throws {
        let daemon = try Daemon()
        let members = try (0..<2).map { _ in try daemon.client() }
        for member in members { #expect(try member.command("QSUB pool work.q") == "+OK 1") }
        for round in 0..<4 {
            let reply = try members[0].command("ASK work.q 2000 0 r\(round)").split(separator: " ")
            #expect(reply[2] == "1", "one member of the group, not the asker")
            let question = try members[1].readLine()
            #expect(question == "ASK work.q \(reply[1]) r\(round)")
            #expect(try members[1].command("ANSWER \(reply[1]) ok") == "+OK 1")
            #expect(try members[0].readLine().hasPrefix("ANSWER \(reply[1]) "))
            #expect(try members[0].readLine() == "DONE \(reply[1]) asked=1 answered=1 gone=0")
        }
    }

    /// BPUB carries any bytes: BMSG for a payload a line cannot carry, MSG otherwise; refused headers have
    /// their bytes dropped and the connection goes on; a bad line end after the bytes closes it. History
    /// replays a BMSG as BMSG.
    @Test func anyBytesOverTCP() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("history.yaml")],
                                environment: ["FANOUTD_MAX_PAYLOAD": "4096"])
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB orders.>") == "+OK 1")
        let publisher = try daemon.client()
        let payload: [UInt8] = Array("{\n  \"a\": 1\n}".utf8) + [0, 0xFF, 0x0D, 0x0A]
        try publisher.send(Array("BPUB orders.json \(payload.count)\r\n".utf8) + payload + [0x0D, 0x0A])
        #expect(try publisher.readLine() == "+OK 1")
        #expect(try subscriber.readLine() == "BMSG orders.json 1 \(payload.count)")
        #expect(try subscriber.readBytes(payload.count + 1) == payload + [0x0A])
        try publisher.send(Array("BPUB orders.line 5\nhello\n".utf8))
        #expect(try publisher.readLine() == "+OK 1")
        #expect(try subscriber.readLine() == "MSG orders.line 1 hello", "a line client never sees a difference")
        try publisher.send(Array("BPUB orders.big 5000\n".utf8) + [UInt8](repeating: 0x0A, count: 5000) + [0x0A])
        #expect(try publisher.readLine().hasPrefix("-ERR too-long"))
        try publisher.send(Array("BPUB bad..subject 3\n\n\n\n\n".utf8))
        #expect(try publisher.readLine().hasPrefix("-ERR bad-subject"))
        #expect(try publisher.command("BPUB orders.x five").hasPrefix("-ERR syntax"), "a length that is not digits")
        #expect(try publisher.command("PING still") == "+PONG still")

        let late = try daemon.client()
        let epoch = try #require(try infoFields(late.command("INFO"))["epoch"])
        #expect(try late.command("LAST orders.json") == "+OK 1 epoch=\(epoch) seq=1 replayed=1 missed=0")
        #expect(try late.readLine() == "BMSG orders.json 1 \(payload.count)", "replayed in the form first pushed")
        #expect(try late.readBytes(payload.count + 1) == payload + [0x0A])

        try publisher.send(Array("BPUB orders.y 2\nabX".utf8))
        #expect(try publisher.readLine().hasPrefix("-ERR syntax"))
        #expect(try publisher.readLineOrEOF() == nil, "framing lost: the server closes")
    }

    /// The system's nc speaks 1.2 as a person would: a group member and an asker.
    @Test func groupsAndQuestionsWithNetcat() throws {
        let daemon = try Daemon()
        let member = try Netcat(port: daemon.port)
        _ = try member.output.waitForLine(containing: "+HELLO", timeout: 10)
        try member.send("QSUB workers jobs.*\n")
        _ = try member.output.waitForLine(containing: "+OK 1", timeout: 10)
        let asker = try daemon.client()
        let reply = try asker.command("ASK jobs.resize 5000 0 photo-42").split(separator: " ")
        #expect(reply[2] == "1")
        _ = try member.output.waitForLine(containing: "ASK jobs.resize \(reply[1]) photo-42", timeout: 10)
        try member.send("ANSWER \(reply[1]) done\n")
        #expect(try asker.readLine().hasSuffix(" done"))
        #expect(try asker.readLine() == "DONE \(reply[1]) asked=1 answered=1 gone=0")
    }

    /// POST /publish takes any bytes up to max_payload; an event stream carries a payload a line cannot as
    /// `payload_base64`.
    @Test func anyBytesOverHTTPAndEventStreams() throws {
        let daemon = try Daemon(arguments: Self.http)
        let port = try daemon.httpPort()
        let stream = try eventStream(port: port, query: "subject=doc.x")
        _ = try stream.stdout.waitForLine(containing: ": +OK 1", timeout: 10)
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB doc.x") == "+OK 1")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-bpub-\(getpid()).bin")
        let body: [UInt8] = Array("two\nlines".utf8)
        try Data(body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let posted = try curl(["-X", "POST", "--data-binary", "@\(file.path)", "http://127.0.0.1:\(port)/publish/doc.x"])
        #expect(posted.status == 200 && posted.body == [#"{"receivers":2,"seq":1}"#], "\(posted)")
        #expect(try subscriber.readLine() == "BMSG doc.x 1 9")
        #expect(try subscriber.readBytes(10) == body + [0x0A])
        let event = try stream.stdout.waitForLine(containing: "payload_base64", timeout: 10)
        #expect(event == #"data: {"subject":"doc.x","seq":1,"payload_base64":"dHdvCmxpbmVz"}"#)
        // A line payload that is not UTF-8 cannot be a JSON string faithfully either.
        try subscriber.send([UInt8]("PUB doc.x ".utf8) + [0xFF, 0x41] + [0x0A])
        #expect(try subscriber.readLine() == "+OK 2")
        let latin = try stream.stdout.waitForLine(containing: #""seq":2"#, timeout: 10)
        #expect(latin == #"data: {"subject":"doc.x","seq":2,"payload_base64":"/0E="}"#)
        kill(stream.process.processIdentifier, SIGKILL)
        _ = stream.finish(timeout: 10)
    }

    /// GET /groups lists each group with the pattern it holds and its live members, for the console.
    @Test func groupsAreListedOverHTTP() throws {
        let daemon = try Daemon(arguments: Self.http)
        let members = try (0..<2).map { _ in try daemon.client() }
        #expect(try members[0].command("QSUB workers jobs.*") == "+OK 1")
        #expect(try members[1].command("QSUB workers jobs.* other.x") == "+OK 2")
        let listing = try curl(["http://127.0.0.1:\(try daemon.httpPort())/groups"])
        #expect(listing.status == 200)
        #expect(listing.body == [#"{"total":2,"groups":[{"pattern":"jobs.*","group":"workers","members":2},"#
            + #"{"pattern":"other.x","group":"workers","members":1}]}"#], "\(listing)")
    }

    /// BPUB as one WebSocket binary frame, BMSG as one binary frame; other binary frames are answered.
    @Test func anyBytesOverWebSocket() throws {
        let daemon = try Daemon(arguments: Self.http)
        let run = try runPythonCheck("websocket_checks.py", "binary", daemon: daemon).finish(timeout: 90)
        #expect(run.status == 0 && run.stdout.contains("ok binary"), "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }
}
