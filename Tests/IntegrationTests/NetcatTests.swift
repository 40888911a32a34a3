import FanoutTestSupport
import Foundation
import Testing

@Suite("Netcat and hostile input", .threadPerTest, .timeLimit(.minutes(2)))
struct NetcatTests {
    /// PROTOCOL.md's example, typed into the system's nc exactly as a person would.
    @Test func theProtocolExampleWithNetcat() throws {
        let daemon = try Daemon()
        let subscriber = try Netcat(port: daemon.port)
        _ = try subscriber.output.waitForLine(containing: "+HELLO fanout/1 ", timeout: 10)
        try subscriber.send("SUB news.*\n")
        #expect(try subscriber.output.waitForLine(containing: "+OK", timeout: 10) == "+OK 1")

        let publisher = try Netcat(port: daemon.port)
        _ = try publisher.output.waitForLine(containing: "+HELLO", timeout: 10)
        try publisher.send("PUB news.uk hello world\n")
        #expect(try publisher.output.waitForLine(containing: "+OK", timeout: 10) == "+OK 1")
        #expect(try subscriber.output.waitForLine(containing: "MSG", timeout: 10) == "MSG news.uk 1 hello world")
    }

    @Test func netcatWithCRLF() throws {
        let daemon = try Daemon()
        let client = try Netcat(port: daemon.port, extraArguments: ["-C"])
        try client.send("PING over crlf\n")
        #expect(try client.output.waitForLine(containing: "+PONG", timeout: 10) == "+PONG over crlf")
    }

    /// Random bytes never crash the server and never break the one-reply-per-line rule.
    @Test(arguments: [UInt64(11), 12, 13])
    func randomBytesGetOneReplyPerLine(seed: UInt64) throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_LINE": "512"])
        let client = try daemon.client()
        var generator = SeededGenerator(seed: seed)
        var expectedReplies = 0
        var input: [UInt8] = []
        for _ in 0..<400 {
            var line: [UInt8] = (0..<Int(generator.next() % 700)).map { _ in
                let byte = UInt8(truncatingIfNeeded: generator.next())
                return byte == 0x0A ? 0x20 : byte
            }
            // Keep QUIT out (it would close the connection); everything else is fair game.
            if line.count >= 4, String(decoding: line.prefix(6), as: UTF8.self).uppercased().contains("QUIT") { line[0] = 0x21 }
            var content = line
            if content.last == 0x0D { content.removeLast() }
            let blank = content.allSatisfy { $0 == 0x20 || $0 == 0x09 }
            if !blank || content.count > 512 { expectedReplies += 1 }
            input += line + [0x0A]
        }
        try client.send(input)
        try client.sendLine("PING end-of-noise")
        var replies = 0
        while true {
            let line = try client.readLine()
            if line == "+PONG end-of-noise" { break }
            #expect(line.hasPrefix("+") || line.hasPrefix("-ERR ") || line.hasPrefix("MSG "), "\(line.prefix(80))")
            if !line.hasPrefix("MSG ") { replies += 1 }
        }
        #expect(replies == expectedReplies)
        let fresh = try daemon.client()
        #expect(try fresh.command("PING") == "+PONG", "the server is still serving")
    }

    @Test func endlessLineWithoutNewlineKeepsMemoryBounded() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        let baseline = try daemon.residentBytes()
        let chunk = [UInt8](repeating: UInt8(ascii: "z"), count: 1 << 20)
        for _ in 0..<64 { try client.send(chunk) }
        #expect(try client.readLine().hasPrefix("-ERR too-long "))
        let growth = try daemon.residentBytes() - baseline
        #expect(growth < 16 << 20, "64 MiB without a newline grew the server by \(growth >> 20) MiB")
        try client.send("\n")
        #expect(try client.command("PING") == "+PONG")
    }

    @Test func floodingCommandsWithoutReadingRepliesIsThrottled() throws {
        let daemon = try Daemon()
        let client = try LineClient(port: daemon.port, timeout: 2)
        let baseline = try daemon.residentBytes()
        let burst = [UInt8](String(repeating: "PING flood-flood-flood-flood\n", count: 20_000).utf8)
        var sentBursts = 0
        // The server stops reading once our unread replies pile up, so sending must eventually stall.
        do {
            for _ in 0..<2_000 {
                try client.send(burst)
                sentBursts += 1
            }
            Issue.record("the server kept reading although no reply was read")
        } catch {
            #expect(sentBursts < 2_000)
        }
        let growth = try daemon.residentBytes() - baseline
        #expect(growth < 32 << 20, "server grew by \(growth >> 20) MiB under a command flood")
        let other = try daemon.client()
        #expect(try other.command("PING") == "+PONG", "other clients are still served")
    }
}
