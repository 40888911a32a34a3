import FanoutMQTT
import FanoutProtocol
import FanoutTestSupport
import Testing

/// The standard's string rules (section 1.5.3) against Swift's own UTF-8 validation, and which packets a
/// client may send.
@Suite struct MQTTTextTests {
    /// Random byte strings, biased towards UTF-8's lead and continuation bytes: accepted exactly when Swift's
    /// validating initializer accepts them and they hold no 0 byte.
    @Test func agreesWithSwiftsUTF8ValidationWithoutNul() {
        var random = SeededGenerator(seed: 153)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xA0, 0xED, 0x9F,
                                    0xEF, 0xF0, 0x90, 0xF4, 0x8F, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...8, using: &random)).map { _ in
                Bool.random(using: &random) ? interesting.randomElement(using: &random)!
                    : UInt8.random(in: 0...255, using: &random)
            }
            let swift = String(validating: bytes, as: UTF8.self) != nil && !bytes.contains(0)
            let ours = bytes.withUnsafeBytes { (try? MQTTText.validate($0, field: "t")) != nil }
            #expect(ours == swift, "\(bytes)")
        }
    }

    @Test func serverOnlyPacketsAreNamed() {
        let serverOnly = MQTTPacketType.allCases.filter { !$0.isSentByClients }
        #expect(serverOnly == [.connack, .suback, .unsuback, .pingresp])
    }
}
