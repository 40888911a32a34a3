import FanoutProtocol
import Testing

/// The line framer's work for one line or one BPUB payload, counted: every input byte once, plus the bytes its
/// buffer held each time the buffer grew (observed through `bufferCapacity` after each feed). Linear in the
/// message however the client splits it: 16-byte pieces must cost at most a few times one piece.
@Suite("Line framer cost is linear, whatever the split")
struct LineFramerCostTests {
    static let megabyte = 1 << 20

    /// Feeds `input` in pieces of `piece` bytes; returns the work and the lines and payloads handed out.
    private func meter(_ input: [UInt8], piece: Int, payload: Int?) -> (work: Int, out: [[UInt8]]) {
        var framer = LineFramer(maxLine: 2 * Self.megabyte)
        var work = 0
        var capacity = 0
        var out: [[UInt8]] = []
        for start in stride(from: 0, to: input.count, by: piece) {
            let chunk = Array(input[start..<min(start + piece, input.count)])
            let held = framer.bufferedCount
            let consumed = chunk.withUnsafeBytes { bytes in
                framer.feed(bytes) { event in
                    switch event {
                    case .line(let line):
                        out.append(Array(line))
                        if let payload, out.count == 1 { return .readPayload(payload) }
                    case .payload(let bytes): out.append(Array(bytes))
                    case .tooLong, .badPayloadEnd: Issue.record("unexpected \(event)")
                    }
                    return .goOn
                }
            }
            #expect(consumed == chunk.count)
            work += chunk.count
            if framer.bufferCapacity > capacity { work += held }
            capacity = framer.bufferCapacity
        }
        return (work, out)
    }

    @Test func aLongLineIn16BytePieces() {
        let line = [UInt8](repeating: 0x61, count: Self.megabyte)
        let whole = meter(line + [0x0A], piece: .max, payload: nil)
        let pieces = meter(line + [0x0A], piece: 16, payload: nil)
        #expect(whole.out == [line] && pieces.out == [line])
        #expect(pieces.work <= 3 * whole.work, "16-byte pieces: \(pieces.work), one piece: \(whole.work)")
    }

    @Test func aBinaryPayloadIn16BytePieces() {
        let bytes = (0..<Self.megabyte).map { UInt8(truncatingIfNeeded: $0) }
        let input = Array("BPUB a \(bytes.count)\n".utf8) + bytes + [0x0A]
        let whole = meter(input, piece: .max, payload: bytes.count)
        let pieces = meter(input, piece: 16, payload: bytes.count)
        #expect(whole.out.count == 2 && whole.out[1] == bytes && pieces.out == whole.out)
        #expect(pieces.work <= 3 * whole.work, "16-byte pieces: \(pieces.work), one piece: \(whole.work)")
    }
}
