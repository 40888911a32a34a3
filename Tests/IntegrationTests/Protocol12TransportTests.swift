import Foundation
import Testing

private let readerToken = "reader-secret-token"
private let sensorsToken = "sensor-secret-token"

/// Protocol 1.2 where Protocol12Tests does not go: the permissions of QSUB, ASK and BPUB, the three shapes over
/// unix sockets and TLS, and the limits that hold questions (answers count toward the asker's output limit;
/// `max_open_questions` is server-wide).
@Suite("Protocol 1.2: permissions, transports, limits", .threadPerTest, .timeLimit(.minutes(3)))
struct Protocol12TransportTests {
    private func login(_ daemon: Daemon, _ token: String) throws -> LineClient {
        let client = try LineClient(port: daemon.port)
        #expect(try client.readLine().contains(" auth=required "))
        #expect(try client.command("AUTH \(token)") == "+OK")
        return client
    }

    /// QSUB needs subscribe rights, ASK and BPUB publish rights; a refused BPUB's bytes are read and dropped.
    @Test func permissionsGateGroupsQuestionsAndAnyBytes() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("auth.yaml")])
        let reader = try login(daemon, readerToken)  // subscribes to > but sensors.secret.>; publishes nothing
        let sensors = try login(daemon, sensorsToken)  // publishes to sensors.>; subscribes to nothing
        #expect(try reader.command("QSUB workers sensors.kitchen") == "+OK 1")
        #expect(try reader.command("QSUB workers sensors.secret.key").hasPrefix("-ERR denied "))
        #expect(try reader.command("ASK sensors.kitchen 1000 0 temp?").hasPrefix("-ERR denied "))
        #expect(try sensors.command("QSUB workers sensors.hall").hasPrefix("-ERR denied "))
        #expect(try sensors.command("ASK alarms.fire 1000 0 on?").hasPrefix("-ERR denied "))
        try sensors.send("BPUB alarms.fire 3\nx\ny\n")
        #expect(try sensors.readLine().hasPrefix("-ERR denied "))
        #expect(try sensors.command("PING after") == "+PONG after", "the refused payload was dropped whole")
        // Allowed both ways: the group member is asked, and its answer comes back.
        let reply = try sensors.command("ASK sensors.kitchen 5000 0 temp?").split(separator: " ")
        #expect(reply.count == 3 && reply[2] == "1", "\(reply)")
        #expect(try reader.readLine() == "ASK sensors.kitchen \(reply[1]) temp?")
        #expect(try reader.command("ANSWER \(reply[1]) 21.5") == "+OK 1")
        #expect(try sensors.readLine().hasSuffix(" 21.5"))
        #expect(try sensors.readLine() == "DONE \(reply[1]) asked=1 answered=1 gone=0")
    }

    /// A group member, a binary publish and a question over a unix socket, with TCP peers.
    @Test func theShapesOverAUnixSocket() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-unix12-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let daemon = try Daemon(listen: ["127.0.0.1:0", "unix:\(path)"])
        let local = try LineClient(unixPath: path)
        #expect(try local.readLine().hasPrefix("+HELLO fanout/1 "))
        #expect(try local.command("QSUB workers u.jobs") == "+OK 1")
        let tcp = try daemon.client()
        let payload: [UInt8] = Array("line one\nline two".utf8) + [0]
        try tcp.send(Array("BPUB u.jobs \(payload.count)\n".utf8) + payload + [0x0A])
        #expect(try tcp.readLine() == "+OK 1")
        #expect(try local.readLine() == "BMSG u.jobs 1 \(payload.count)")
        #expect(try local.readBytes(payload.count + 1) == payload + [0x0A])
        #expect(try tcp.command("SUB u.svc") == "+OK 1")
        let reply = try local.command("ASK u.svc 5000 0 ping?").split(separator: " ")
        #expect(reply.count == 3 && reply[2] == "1", "\(reply)")
        #expect(try tcp.readLine() == "ASK u.svc \(reply[1]) ping?")
        #expect(try tcp.command("ANSWER \(reply[1]) pong") == "+OK 1")
        #expect(try local.readLine().hasSuffix(" pong"))
        #expect(try local.readLine() == "DONE \(reply[1]) asked=1 answered=1 gone=0")
    }

    /// The client over TLS: a group member, a question and a binary publish.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "no openssl command"))
    func theShapesOverTLS() throws {
        let pki = try TestPKI()
        let tlsPort = try freePort()
        let daemon = try Daemon(environment: ["FANOUTD_TLS_LISTEN": "127.0.0.1:\(tlsPort)",
                                              "FANOUTD_TLS_CERT": pki.path("server.pem"),
                                              "FANOUTD_TLS_KEY": pki.path("server-key.pem")])
        _ = try daemon.stderr.waitForLine(containing: "(tls)", timeout: 10)
        let tls = ["--tls", "--ca", pki.path("ca.pem"), "--server", "127.0.0.1:\(tlsPort)"]
        let member = try FanoutTool(["sub"] + tls + ["--group", "workers", "--count", "1", "--format", "json",
                                                     "t.jobs"])
        try waitForSubscribers(daemon, subject: "t.jobs")
        let tcp = try daemon.client()
        let payload: [UInt8] = Array("{\n  \"job\": 1\n}".utf8)
        try tcp.send(Array("BPUB t.jobs \(payload.count)\n".utf8) + payload + [0x0A])
        #expect(try tcp.readLine() == "+OK 1")
        let (status, lines, errors) = member.finish(timeout: 30)
        #expect(status == 0, "\(errors)")
        #expect(lines.count == 1 && lines[0].contains(Data(payload).base64EncodedString()), "\(lines)")

        #expect(try tcp.command("SUB t.svc") == "+OK 1")
        let asker = try FanoutTool(["ask"] + tls + ["t.svc", "ping?", "--timeout", "10000"])
        let question = try tcp.readLine()
        let id = try #require(question.split(separator: " ").dropFirst(2).first)
        #expect(question == "ASK t.svc \(id) ping?")
        #expect(try tcp.command("ANSWER \(id) pong") == "+OK 1")
        let (askStatus, answers, summary) = asker.finish(timeout: 30)
        #expect(askStatus == 0, "\(summary)")
        #expect(answers.count == 1 && answers[0].hasSuffix("pong"), "\(answers)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-tls-\(UUID().uuidString)")
        try Data(payload).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let subscribed = try tcp.command("SUB t.files")  // its second subscription
        #expect(subscribed == "+OK 2")
        let pub = try FanoutTool.run(["pub"] + tls + ["--file", file.path, "t.files"])
        #expect(pub.status == 0, "\(pub.stderr)")
        #expect(try tcp.readLine() == "BMSG t.files 1 \(payload.count)")
        #expect(try tcp.readBytes(payload.count + 1) == payload + [0x0A])
    }

    /// Answers are output like messages: an asker that stops reading is dropped as a slow consumer, and its
    /// open questions close (a later answer gets `+OK 0`).
    @Test func answersCountTowardTheAskersOutputLimit() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_PENDING_BYTES": String(128 << 10),
                                              "FANOUTD_SEND_BUFFER_BYTES": String(64 << 10)])
        let responder = try daemon.client(timeout: 30)
        #expect(try responder.command("SUB big.q") == "+OK 1")
        let asker = try LineClient(port: daemon.port, receiveBuffer: 4096)
        _ = try asker.readLine()
        let questions = 200
        try asker.send(String(repeating: "ASK big.q 30000 0 q\n", count: questions))
        var ids: [String] = []
        for _ in 0..<questions {
            let line = try responder.readLine()
            ids.append(String(line.split(separator: " ")[2]))
        }
        let answer = String(repeating: "a", count: 16 << 10)
        var refused = 0
        for id in ids where try responder.command("ANSWER \(id) \(answer)") == "+OK 0" { refused += 1 }
        #expect(refused > 0, "the asker was dropped before every answer was taken")
        let info = infoFields(try responder.command("INFO"))
        #expect(info["slow_consumers"] == "1", "the asker that stopped reading")
        #expect(info["open_questions"] == "0", "its questions closed with it")
    }

    /// `max_open_questions` bounds the questions open on the server, whoever asks them.
    @Test func openQuestionsAreBoundedServerWide() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_OPEN_QUESTIONS": "2"])
        let responder = try daemon.client()
        #expect(try responder.command("SUB q.x") == "+OK 1")
        let askers = try (0..<3).map { _ in try daemon.client() }
        #expect(try askers[0].command("ASK q.x 30000 0 a").hasPrefix("+OK "))
        #expect(try askers[1].command("ASK q.x 30000 0 b").hasPrefix("+OK "))
        #expect(try askers[2].command("ASK q.x 30000 0 c").hasPrefix("-ERR limit "))
        askers[0].close()
        // The responder has the questions' pushes to read: INFO goes over a connection of its own.
        let observer = try daemon.client()
        try eventually("the first asker's question closed") {
            infoFields(try observer.command("INFO"))["open_questions"] == "1"
        }
        #expect(try askers[2].command("ASK q.x 30000 0 c").hasPrefix("+OK "))
    }
}
