import FanoutHTTP
import Testing

/// The decoder asks before a binary message's buffer grows (the server counts that toward max_memory): it
/// asks for what it then holds, a refusal drops the message at once with one event and reads its remaining
/// frames to nothing, and the decoder is between messages at its end.
@Suite("WebSocket decoder admission")
struct DecoderAdmitTests {
    /// Feeds `input` whole, with `budget` bytes to admit; returns the events and what was admitted.
    private func feed(_ decoder: inout WebSocketDecoder, _ input: [UInt8], budget: inout Int) -> [String] {
        var out: [String] = []
        var left = budget
        _ = input.withUnsafeBytes { bytes in
            decoder.feed(bytes, admit: { asked in
                guard asked <= left else { return false }
                left -= asked
                return true
            }) { event in
                switch event {
                case .binary(let bytes): out.append("binary:\(bytes.count)")
                case .binaryRefused: out.append("refused")
                default: out.append("\(event)")
                }
                return true
            }
        }
        budget = left
        return out
    }

    @Test func aMessagePastItsBudgetIsRefusedOnceAndSkipped() {
        var decoder = WebSocketDecoder(maxMessage: 100)
        decoder.maxBinaryMessage = 1 << 20
        let chunk = [UInt8](repeating: 7, count: 3000)
        let message = clientFrame(2, chunk, fin: false) + clientFrame(0, chunk, fin: false) + clientFrame(0, chunk)
        var budget = 5000
        #expect(feed(&decoder, message, budget: &budget) == ["refused"])
        #expect(decoder.admittedBytes <= 4096, "a refused message's buffer is let go")
        // Admitted in full: what was asked for is what is held, and it covers the message.
        budget = 1 << 20
        #expect(feed(&decoder, message, budget: &budget) == ["binary:9000"])
        #expect((1 << 20) - budget >= 9000)
        #expect(decoder.admittedBytes == 0, "a buffer over the kept capacity is given back with its message")
    }

    @Test func growthIsGeometricSoSmallFramesAskFewTimes() {
        var decoder = WebSocketDecoder(maxMessage: 100)
        decoder.maxBinaryMessage = 1 << 20
        var asks = 0
        var input: [UInt8] = clientFrame(2, [1], fin: false)
        for _ in 0..<9_998 { input += clientFrame(0, [1], fin: false) }
        input += clientFrame(0, [1])
        var events = 0
        _ = input.withUnsafeBytes { bytes in
            decoder.feed(bytes, admit: { _ in asks += 1; return true }) { _ in events += 1; return true }
        }
        #expect(events == 1)
        #expect(asks <= 16, "\(asks) asks for a message of 10,000 one-byte frames")
    }
}
