@testable import FanoutProtocol
import Testing

/// WHO and KICK (1.3) as the parser reads them: every form the contract gives, and each refusal, so that a
/// kicked client is never sent a reason it could not read as one line of text.
@Suite("WHO and KICK parsing")
struct PresenceCommandTests {
    private func parse(_ bytes: [UInt8]) -> Result<Command?, ProtocolError> {
        bytes.withUnsafeBytes { line in
            do throws(ProtocolError) { return .success(try CommandParser.parse(line)) } catch { return .failure(error) }
        }
    }

    private func parse(_ text: String) -> Result<Command?, ProtocolError> { parse(Array(text.utf8)) }

    private func who(_ text: String) -> (String, Int)? {
        guard case .success(.who(let subject, let limit)?) = parse(text) else { return nil }
        return (subject, limit)
    }

    private func kick(_ text: String) -> (Command.KickTarget, String?)? {
        guard case .success(.kick(let target, let reason)?) = parse(text) else { return nil }
        return (target, reason)
    }

    private func code(_ result: Result<Command?, ProtocolError>) -> ErrorCode? {
        if case .failure(let error) = result { return error.code }
        return nil
    }

    @Test func whoTakesAConcreteSubjectAndALimitClampedTo1000() {
        #expect(who("WHO chat.room1")! == ("chat.room1", 100))
        #expect(who("who chat.room1 5")! == ("chat.room1", 5))
        #expect(who("WHO chat.room1 0")! == ("chat.room1", 0))
        #expect(who("WHO chat.room1 5000")! == ("chat.room1", 1000))
        #expect(who("WHO chat.room1 18446744073709551615")! == ("chat.room1", 1000))
        #expect(code(parse("WHO chat.*")) == .badSubject)
        #expect(code(parse("WHO")) == .syntax)
        #expect(code(parse("WHO a 1 2")) == .syntax)
        #expect(code(parse("WHO a -1")) == .syntax)
        #expect(code(parse("WHO a 18446744073709551616")) == .syntax)
    }

    @Test func kickNamesAClientANodesClientOrAUser() {
        #expect(kick("KICK 7")! == (.client(node: nil, id: 7), nil))
        #expect(kick("kick n1/7 too loud")! == (.client(node: "n1", id: 7), "too loud"))
        #expect(kick("KICK user=alice")! == (.user("alice"), nil))
        #expect(kick("KICK 7 é ok")! == (.client(node: nil, id: 7), "é ok"))
        for bad in ["KICK", "KICK x", "KICK /7", "KICK a/b/7", "KICK user=", "KICK 7/"] {
            #expect(code(parse(bad)) == .syntax, "\(bad)")
        }
    }

    @Test func aKickReasonIsPrintableUTF8OfAtMost256Bytes() {
        #expect(kick("KICK 1 " + String(repeating: "r", count: 256)) != nil)
        #expect(code(parse("KICK 1 " + String(repeating: "r", count: 257))) == .syntax)
        for byte: UInt8 in [0x00, 0x0D, 0x1B, 0x7F, 0xFF, 0xC3] {
            #expect(code(parse(Array("KICK 1 a".utf8) + [byte] + Array("b".utf8))) == .syntax, "byte \(byte)")
        }
    }
}
