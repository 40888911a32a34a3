import Foundation
import Testing

/// `fanout` against a real fanoutd for protocol 1.2: groups (`sub --group`), questions (`ask`, `answer`) and any
/// bytes (`pub --binary`, `pub --file`, `sub --format raw|json`).
@Suite("The fanout client with protocol 1.2", .threadPerTest, .timeLimit(.minutes(3)))
struct CLIProtocol12Tests {
    // MARK: Groups

    @Test func aGroupSpreadsMessagesOverItsMembersEachToExactlyOne() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let members = try (0..<3).map { _ in
            try FanoutTool(["sub", "--server", server, "--group", "workers", "--format", "line", "jobs.*"])
        }
        try waitForSubscribers(daemon, subject: "jobs.*", count: 3)
        let publisher = try daemon.client()
        let total = 60
        for number in 1...total {
            #expect(try publisher.command("PUB jobs.build job-\(number)") == "+OK 1", "one receiver: one member")
        }
        // Each member prints what it got; together they must have printed every message once.
        try eventually("the members printed \(total) messages") { members.map { $0.stdout.all.count }.reduce(0, +) >= total }
        let printed = members.flatMap { $0.stdout.all }
        #expect(printed.count == total)
        #expect(Set(printed).count == total, "no message went to two members")
        #expect(Set(printed) == Set((1...total).map { "MSG jobs.build \($0) job-\($0)" }))
        #expect(members.allSatisfy { !$0.stdout.all.isEmpty }, "every member got some: \(members.map { $0.stdout.all.count })")
        for member in members {
            let seqs = member.stdout.all.compactMap { UInt64($0.split(separator: " ")[2]) }
            #expect(seqs == seqs.sorted(), "each member sees an increasing subsequence")
            #expect(!member.stderr.all.contains { $0.contains("gap on") }, "a member's skipped seqs are not gaps")
        }
    }

    @Test func aPlainSubscriberAndAGroupBothGetEachMessage() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let plain = try FanoutTool(["sub", "--server", server, "--count", "5", "audit"])
        let members = try (0..<2).map { _ in try FanoutTool(["sub", "--server", server, "--group", "g", "audit"]) }
        try waitForSubscribers(daemon, subject: "audit", count: 3)
        for number in 1...5 {
            #expect(try FanoutTool.run(["pub", "--server", server, "audit", "m\(number)"]).stdout == ["2"])
        }
        #expect(plain.finish().stdout == ["m1", "m2", "m3", "m4", "m5"])
        try eventually("the group got all five") { members.map { $0.stdout.all.count }.reduce(0, +) == 5 }
    }

    @Test func groupNamesAreChecked() throws {
        let bad = try FanoutTool.run(["sub", "--group", "no spaces", "x"])
        #expect(bad.status == 64)
        let withLast = try FanoutTool.run(["sub", "--group", "g", "--last", "3", "x"])
        #expect(withLast.status == 64)
    }

    // MARK: Questions

    /// Three responders on `svc.n` answering 1, 2 and 3 (`fanout answer` running `sh -c 'echo N'`).
    private func numberResponders(_ daemon: Daemon, answers: [String] = ["1", "2", "3"]) throws -> [FanoutTool] {
        let server = "127.0.0.1:\(daemon.port)"
        let responders = try answers.map { answer in
            try FanoutTool(["answer", "--server", server, "svc.n", "--", "sh", "-c", "cat > /dev/null; echo \(answer)"])
        }
        try waitForSubscribers(daemon, subject: "svc.n", count: answers.count)
        return responders
    }

    @Test func askGathersEveryResponderAndSaysWhoAnswered() throws {
        let daemon = try Daemon()
        let responders = try numberResponders(daemon)
        let ask = try FanoutTool.run(["ask", "--server", "127.0.0.1:\(daemon.port)", "--timeout", "10000", "svc.n", "how many?"])
        #expect(ask.status == 0)
        #expect(ask.stdout.map { $0.split(separator: " ").last.map(String.init) ?? "" }.sorted() == ["1", "2", "3"])
        let clients = try daemon.client().command("CLIENTS")
        for line in ask.stdout {
            let responder = String(line.split(separator: " ")[0])
            #expect(clients.contains("id=\(responder),"), "the responder is a connection id as CLIENTS shows it")
        }
        #expect(ask.stderr == ["fanout: 3 of 3 answered, 0 gone"])
        _ = responders
    }

    @Test(arguments: [
        ("count", ["3"]), ("sum", ["6"]), ("min", ["1"]), ("max", ["3"]), ("and", ["0"]), ("or", ["3"]),
    ])
    func reduceFoldsTheAnswers(reduction: String, expected: [String]) throws {
        let daemon = try Daemon()
        let responders = try numberResponders(daemon)
        let ask = try FanoutTool.run(["ask", "--server", "127.0.0.1:\(daemon.port)", "--timeout", "10000",
                                      "--reduce", reduction, "svc.n", "q"])
        #expect(ask.status == 0, "\(ask.stderr)")
        #expect(ask.stdout == expected)
        #expect(ask.stderr == ["fanout: 3 of 3 answered, 0 gone"])
        _ = responders
    }

    @Test func reduceJSONAllAndDecimals() throws {
        let daemon = try Daemon()
        let responders = try numberResponders(daemon, answers: ["1.5", "-2", "4"])
        let server = "127.0.0.1:\(daemon.port)"
        let json = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "--reduce", "json", "svc.n", "q"])
        let array = try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [[String: String]]
        #expect(json.stdout.count == 1, "one array on one line")
        #expect(array?.compactMap { $0["payload"] }.sorted() == ["-2", "1.5", "4"])
        #expect(array?.allSatisfy { $0["responder"] != nil } == true)
        let all = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "--reduce", "all", "svc.n", "q"])
        #expect(all.stdout.sorted() == ["-2", "1.5", "4"])
        let sum = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "--reduce", "sum", "svc.n", "q"])
        #expect(sum.stdout == ["3.5"], "a decimal answer makes a decimal sum")
        let min = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "--reduce", "min", "svc.n", "q"])
        #expect(min.stdout == ["-2.0"])
        let and = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "--reduce", "and", "svc.n", "q"])
        #expect(and.status == 65, "bitwise folds take integers only")
        #expect(and.stdout.isEmpty)
        #expect(and.stderr.first?.contains("is not an integer: \"1.5\"") == true, "\(and.stderr)")
        _ = responders
    }

    @Test func aNonNumericAnswerIsAnErrorForSum() throws {
        let daemon = try Daemon()
        let responders = try numberResponders(daemon, answers: ["1", "many"])
        let sum = try FanoutTool.run(["ask", "--server", "127.0.0.1:\(daemon.port)", "--timeout", "10000",
                                      "--reduce", "sum", "svc.n", "q"])
        #expect(sum.status == 65)
        #expect(sum.stdout.isEmpty, "nothing printed rather than a wrong total")
        #expect(sum.stderr.first?.hasPrefix("fanout: --reduce sum: answer from ") == true)
        #expect(sum.stderr.first?.hasSuffix("is not a number: \"many\"") == true, "\(sum.stderr)")
        _ = responders
    }

    @Test func maxClosesTheQuestionAfterThatManyAnswers() throws {
        let daemon = try Daemon()
        let responders = try numberResponders(daemon)
        let ask = try FanoutTool.run(["ask", "--server", "127.0.0.1:\(daemon.port)", "--timeout", "10000", "--max", "1",
                                      "svc.n", "q"])
        #expect(ask.status == 0)
        #expect(ask.stdout.count == 1)
        #expect(ask.stderr == ["fanout: 1 of 3 answered, 0 gone, 2 silent"])
        _ = responders
    }

    @Test func aSilentReceiverLetsTheQuestionTimeOut() throws {
        let daemon = try Daemon()
        let silent = try daemon.client()
        #expect(try silent.command("SUB svc.slow") == "+OK 1")
        let started = Date()
        let ask = try FanoutTool.run(["ask", "--server", "127.0.0.1:\(daemon.port)", "--timeout", "300", "svc.slow", "q"])
        #expect(ask.status == 4, "no answer")
        #expect(ask.stdout.isEmpty)
        #expect(ask.stderr == ["fanout: 0 of 1 answered, 0 gone, 1 silent"])
        #expect(Date().timeIntervalSince(started) >= 0.3)
        #expect(try silent.readLine().hasPrefix("ASK svc.slow "), "the question did reach it")
    }

    @Test func aResponderThatDisconnectsCountsAsGone() throws {
        let daemon = try Daemon()
        let answering = try daemon.client(), leaving = try daemon.client()
        #expect(try answering.command("SUB svc.g") == "+OK 1")
        #expect(try leaving.command("SUB svc.g") == "+OK 1")
        let ask = try FanoutTool(["ask", "--server", "127.0.0.1:\(daemon.port)", "--timeout", "20000", "svc.g", "q"])
        let push = try answering.readLine()
        let id = String(push.split(separator: " ")[2])
        #expect(try answering.command("ANSWER \(id) yes") == "+OK 1")
        #expect(try leaving.readLine() == "ASK svc.g \(id) q")
        leaving.close()
        let result = ask.finish()
        #expect(result.status == 0)
        #expect(result.stdout.count == 1)
        #expect(result.stdout.first?.hasSuffix(" yes") == true)
        #expect(result.stderr == ["fanout: 1 of 2 answered, 1 gone"])
    }

    @Test func nobodyToAskExitsAtOnceWithNoAnswer() throws {
        let daemon = try Daemon()
        let count = try FanoutTool.run(["ask", "--server", "127.0.0.1:\(daemon.port)", "--reduce", "count", "nobody", "q"])
        #expect(count.status == 4)
        #expect(count.stdout == ["0"])
        #expect(count.stderr == ["fanout: 0 of 0 answered, 0 gone"])
    }

    @Test func answerRunsARealCommandWithThePayloadOnStdin() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let responder = try FanoutTool(["answer", "--server", server, "svc.upper", "--", "tr", "a-z", "A-Z"])
        let environment = try FanoutTool(["answer", "--server", server, "svc.env", "--",
                                          "sh", "-c", "echo \"$FANOUT_SUBJECT $(cat)\""])
        try waitForSubscribers(daemon, subject: "svc.upper")
        try waitForSubscribers(daemon, subject: "svc.env")
        let ask = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "svc.upper", "hello world"])
        #expect(ask.stdout.count == 1)
        #expect(ask.stdout.first?.hasSuffix(" HELLO WORLD") == true, "\(ask.stdout)")
        let env = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "--reduce", "all", "svc.env", "hi"])
        #expect(env.stdout == ["svc.env hi"])
        _ = (responder, environment)
    }

    @Test func aFailingOrHangingCommandGivesNoAnswerAndSaysWhy() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let failing = try FanoutTool(["answer", "--server", server, "svc.fail", "--", "sh", "-c", "echo partial; exit 3"])
        let hanging = try FanoutTool(["answer", "--server", server, "--command-timeout", "200", "svc.hang", "--",
                                      "sh", "-c", "sleep 30; echo late"])
        try waitForSubscribers(daemon, subject: "svc.fail")
        try waitForSubscribers(daemon, subject: "svc.hang")
        let failed = try FanoutTool.run(["ask", "--server", server, "--timeout", "5000", "svc.fail", "q"])
        #expect(failed.status == 4)
        _ = try failing.stderr.waitForLine(containing: "the command exited with status 3; not answered", timeout: 10)
        let started = Date()
        let hung = try FanoutTool.run(["ask", "--server", server, "--timeout", "3000", "svc.hang", "q"])
        #expect(hung.status == 4)
        #expect(hung.stderr == ["fanout: 0 of 1 answered, 0 gone, 1 silent"])
        #expect(Date().timeIntervalSince(started) >= 3, "a killed command leaves the asker waiting: no answer is sent")
        _ = try hanging.stderr.waitForLine(containing: "still running after 200 ms and was killed", timeout: 10)
    }

    @Test func aGroupOfRespondersAnswersEachQuestionOnce() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let responders = try (0..<3).map { _ in
            try FanoutTool(["answer", "--server", server, "--group", "lookup", "svc.lookup", "--", "cat"])
        }
        try waitForSubscribers(daemon, subject: "svc.lookup", count: 3)
        var responderIDs: Set<String> = []
        for number in 1...6 {
            let ask = try FanoutTool.run(["ask", "--server", server, "--timeout", "10000", "svc.lookup", "key\(number)"])
            #expect(ask.stdout.count == 1)
            #expect(ask.stdout.first?.hasSuffix(" key\(number)") == true)
            #expect(ask.stderr == ["fanout: 1 of 1 answered, 0 gone"], "one member of the group is asked")
            if let line = ask.stdout.first { responderIDs.insert(String(line.split(separator: " ")[0])) }
        }
        #expect(responderIDs.count > 1, "the questions were spread over the members")
        _ = responders
    }

    // MARK: Any bytes

    @Test func binaryPayloadsRoundTripThroughRawAndJSON() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let payload: [UInt8] = Array("first line\nNUL\u{0}inside\n".utf8)
        let raw = try FanoutTool(["sub", "--server", server, "--format", "raw", "--count", "1", "blobs.a"])
        let json = try FanoutTool(["sub", "--server", server, "--format", "json", "--count", "2", "blobs.a"])
        try waitForSubscribers(daemon, subject: "blobs.a", count: 2)
        let pub = try FanoutTool.run(["pub", "--server", server, "--binary", "blobs.a"], stdin: Data(payload))
        #expect(pub.status == 0)
        #expect(pub.stdout == ["2"])
        let rawResult = raw.finish()
        #expect(rawResult.status == 0)
        #expect(rawResult.stdout == ["first line", "NUL\u{0}inside"], "the bytes and nothing else")

        // Every byte value, from a file: not UTF-8, so base64 in JSON.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-bytes-\(getpid()).bin")
        let bytes = (0...255).map { UInt8($0) } + [0x0A]
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try FanoutTool.run(["pub", "--server", server, "--file", file.path, "blobs.a"]).stdout == ["1"])
        let lines = json.finish().stdout
        #expect(lines.count == 2)
        let objects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects[0]?["payload"] == nil)
        #expect((objects[0]?["payload_base64"] as? String).flatMap { Data(base64Encoded: $0) } == Data(payload))
        #expect((objects[1]?["payload_base64"] as? String).flatMap { Data(base64Encoded: $0) } == Data(bytes))
        #expect(objects[1]?["seq"] as? Int == 2)
    }

    @Test func aMessageArgumentWithALineFeedGoesWhole() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let sub = try FanoutTool(["sub", "--server", server, "--format", "json", "--count", "1", "notes"])
        try waitForSubscribers(daemon, subject: "notes")
        #expect(try FanoutTool.run(["pub", "--server", server, "notes", "two\nlines"]).stdout == ["1"])
        let line = try #require(sub.finish().stdout.first)
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect((object?["payload_base64"] as? String).flatMap { Data(base64Encoded: $0) } == Data("two\nlines".utf8))
    }

    @Test func aLinePayloadPublishedWithBPUBArrivesAsAnOrdinaryMessage() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let sub = try FanoutTool(["sub", "--server", server, "--format", "line", "--count", "1", "plain"])
        try waitForSubscribers(daemon, subject: "plain")
        #expect(try FanoutTool.run(["pub", "--server", server, "--binary", "plain"], stdin: Data("one line".utf8)).status == 0)
        #expect(sub.finish().stdout == ["MSG plain 1 one line"])
    }

    /// PROTOCOL.md, Any bytes: a payload a line can carry goes as `MSG` whichever verb published it, "a CR at
    /// its end stays part of the payload, as with PUB": on the wire the CR is there, before the LF (where a
    /// line reader takes it for part of the line end, as it would for a PUB's).
    @Test func aPayloadEndingInCRIsPushedAsMSGWithItsCR() throws {
        let daemon = try Daemon()
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB cr") == "+OK 1")
        let server = "127.0.0.1:\(daemon.port)"
        #expect(try FanoutTool.run(["pub", "--server", server, "--binary", "cr"], stdin: Data("ends in CR\r".utf8)).status == 0)
        #expect(try subscriber.readLine() == "MSG cr 1 ends in CR\r")
    }

    @Test func helpShowsTheNewSubcommands() throws {
        for command in ["ask", "answer"] {
            let help = try FanoutTool.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains { $0.contains("fanout \(command)") }, "\(command) --help shows an example")
        }
    }
}
