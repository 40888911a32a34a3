import FanoutTestSupport
@testable import FanoutProtocol
import Testing

/// A parse result in a form tests can compare.
private enum Parsed: Equatable {
    case none
    case command(String)
    case error(ErrorCode)
}

private func parse(_ text: String) -> Parsed {
    Array(text.utf8).withUnsafeBytes { line in
        do throws(ProtocolError) {
            guard let command = try CommandParser.parse(line) else { return .none }
            switch command {
            case .sub(let patterns): return .command("SUB \(patterns)")
            case .unsub(let patterns): return .command("UNSUB \(patterns)")
            case .pub(let subject, let payload):
                return .command("PUB [\(String(decoding: subject, as: UTF8.self))] [\(String(decoding: payload, as: UTF8.self))]")
            case .ping(let text): return .command("PING [\(String(decoding: text, as: UTF8.self))]")
            case .channels(let filter): return .command("CHANNELS \(filter ?? "-")")
            case .auth(let token): return .command("AUTH \(token)")
            default: return .command(command.verb.name)
            }
        } catch {
            return .error(error.code)
        }
    }
}

@Suite("CommandParser")
struct CommandParserTests {
    @Test(arguments: [
        ("SUB news.*", "SUB [\"news.*\"]"),
        ("sub a b\t c.>", "SUB [\"a\", \"b\", \"c.>\"]"),
        ("UNSUB", "UNSUB []"),
        ("UnSub a.b", "UNSUB [\"a.b\"]"),
        ("PUB news.uk hello world", "PUB [news.uk] [hello world]"),
        ("pub a  two spaces", "PUB [a] [ two spaces]"),
        ("PUB a ", "PUB [a] []"),
        ("PUB a", "PUB [a] []"),
        ("  PUB\ta\tx y", "PUB [a] [x y]"),
        ("PING", "PING []"),
        ("ping hello there", "PING [hello there]"),
        ("QUIT", "QUIT"),
        ("help", "HELP"),
        ("INFO", "INFO"),
        ("CHANNELS", "CHANNELS -"),
        ("CHANNELS news.>", "CHANNELS news.>"),
        ("CLIENTS", "CLIENTS"),
        ("AUTH s3cret", "AUTH s3cret"),
    ])
    func parsesEveryVerb(line: String, expected: String) {
        #expect(parse(line) == .command(expected))
    }

    @Test(arguments: [
        ("FOO bar", ErrorCode.unknownCommand),
        ("SUBX a", .unknownCommand),
        ("SUB", .syntax),
        ("PUB", .syntax),
        ("QUIT now", .syntax),
        ("HELP me", .syntax),
        ("INFO x", .syntax),
        ("CLIENTS x", .syntax),
        ("CHANNELS a b", .syntax),
        ("AUTH", .syntax),
        ("AUTH a b", .syntax),
        ("PUB news.* hi", .badSubject),
        ("PUB a.> hi", .badSubject),
        ("PUB a..b hi", .badSubject),
        ("SUB a.>.b", .badSubject),
        ("SUB .a", .badSubject),
        ("SUB a.", .badSubject),
        ("SUB ok bad..one", .badSubject),
        ("UNSUB a..b", .badSubject),
        ("CHANNELS a..b", .badSubject),
    ])
    func rejectsWithTheRightCode(line: String, code: ErrorCode) {
        #expect(parse(line) == .error(code))
    }

    @Test func emptyAndBlankLinesAreIgnored() {
        #expect(parse("") == .none)
        #expect(parse("   \t ") == .none)
    }

    @Test func payloadKeepsEveryByte() {
        let line: [UInt8] = Array("PUB s ".utf8) + [0x00, 0xFF, 0x0D, 0x20, 0x09]
        line.withUnsafeBytes { raw in
            guard case .pub(_, let payload) = try? CommandParser.parse(raw) else {
                Issue.record("expected PUB")
                return
            }
            #expect(Array(payload) == [0x00, 0xFF, 0x0D, 0x20, 0x09])
        }
    }

    @Test func unknownVerbIsEchoedSafely() {
        let line: [UInt8] = [0x01, 0x02, 0x41]
        _ = line.withUnsafeBytes { raw in
            #expect(throws: ProtocolError(.unknownCommand, "'??A' (try HELP)")) { try CommandParser.parse(raw) }
        }
    }

    @Test func randomLinesAlwaysParseOrFailCleanly() {
        var generator = SeededGenerator(seed: 7)
        let words = ["SUB", "PUB", "UNSUB", "PING", "a.b", "*", ">", "..", "x", " ", "\t", "\u{7F}", "CHANNELS"]
        for _ in 0..<5000 {
            var line: [UInt8] = []
            for _ in 0..<Int(generator.next() % 6) {
                if generator.next() % 3 == 0 {
                    line.append(UInt8(truncatingIfNeeded: generator.next()))
                } else {
                    line += Array(words[Int(generator.next() % UInt64(words.count))].utf8)
                }
                line.append(UInt8(ascii: " "))
            }
            line.removeAll { $0 == 0x0A }
            _ = parse(String(decoding: line, as: UTF8.self))
            line.withUnsafeBytes { raw in
                do throws(ProtocolError) {
                    _ = try CommandParser.parse(raw)
                } catch {
                    #expect(!error.line.dropLast().contains("\n"), "an error is one line")
                    #expect([.unknownCommand, .syntax, .badSubject].contains(error.code))
                }
            }
        }
    }
}

/// `RESET` (several nodes) as the server writes it and as a client reads it.
struct ResetLineTests {
    @Test(arguments: [(UInt64?.some(12), "missed=12"), (nil, "missed=unknown")])
    func resetLinesRoundTrip(missed: UInt64?, text: String) {
        var bytes: [UInt8] = []
        Array("orders.eu".utf8).withUnsafeBytes {
            Encoder.appendReset(subject: $0, epoch: "k3.2", seq: 1873, missed: missed, to: &bytes)
        }
        #expect(String(decoding: bytes, as: UTF8.self) == "RESET orders.eu epoch=k3.2 seq=1873 \(text)\n")
        let line = String(decoding: bytes.dropLast(), as: UTF8.self)
        #expect(ServerLine.parse(line) == .reset(subject: "orders.eu", epoch: "k3.2", seq: 1873, missed: missed))
    }

    @Test(arguments: ["RESET a", "RESET a epoch=e seq=x missed=1", "RESET a epoch=e seq=1 missed=-1",
                      "RESET a epoch=e seq=1", "RESET a epoch=e seq=1 missed=1 extra=2"])
    func malformedResetLinesAreNotReadAsResets(line: String) {
        #expect(ServerLine.parse(line) == nil)
    }
}
