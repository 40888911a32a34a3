import FanoutHTTP
import Testing

/// The work a decoder does for one message, counted rather than timed: every input byte once, plus the bytes
/// its buffer held each time the buffer had to grow (a growth moves them). Observed from outside after each
/// feed, through the decoder's `bufferCapacity`, so the count costs the decoder nothing.
struct CopyMeter {
    private(set) var input = 0
    private(set) var moved = 0
    private var capacity = 0

    var work: Int { input + moved }

    mutating func fed(_ count: Int, heldBefore: Int, capacityAfter: Int) {
        input += count
        if capacityAfter > capacity { moved += heldBefore }
        capacity = capacityAfter
    }
}

/// A message's work must be linear in its size however the client splits it: a test per decoder that takes a
/// client's bytes fails when 16-byte (or 1-byte) pieces cost more than a few times the message in one piece.
@Suite("Decoder cost is linear in the message, whatever the split")
struct DecoderCostTests {
    static let megabyte = 1 << 20

    /// Feeds `frames` one feed each and returns the metered work and the messages handed out.
    private func meter(_ frames: [[UInt8]], binary: Bool) -> (work: Int, moved: Int, messages: [[UInt8]]) {
        var decoder = WebSocketDecoder(maxMessage: Self.megabyte + 2)
        if binary { decoder.maxBinaryMessage = 2 * Self.megabyte }
        var meter = CopyMeter()
        var messages: [[UInt8]] = []
        for frame in frames {
            let held = decoder.bufferedCount
            let consumed = frame.withUnsafeBytes { bytes in
                decoder.feed(bytes) { event in
                    switch event {
                    case .text(let message), .binary(let message): messages.append(Array(message))
                    default: Issue.record("unexpected \(event)")
                    }
                    return true
                }
            }
            #expect(consumed == frame.count)
            meter.fed(frame.count, heldBefore: held, capacityAfter: decoder.bufferCapacity)
        }
        return (meter.work, meter.moved, messages)
    }

    /// One message as a first frame and continuation frames of `piece` bytes.
    private func fragmented(_ payload: [UInt8], opcode: UInt8, piece: Int) -> [[UInt8]] {
        stride(from: 0, to: payload.count, by: piece).map { start in
            let end = min(start + piece, payload.count)
            return clientFrame(start == 0 ? opcode : 0, Array(payload[start..<end]), fin: end == payload.count)
        }
    }

    /// Issue 35 item 5: a 1 MiB binary message in 16-byte continuation frames regrew the message buffer at each
    /// frame (an exact-size reserve), moving the whole message every time: quadratic.
    @Test(arguments: [(2 as UInt8, 16), (1, 16), (2, 1)])
    func continuationFramesCostWhatOneFrameCosts(opcode: UInt8, piece: Int) {
        let size = piece == 1 ? 64 << 10 : Self.megabyte
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 95 + 32) }
        let whole = meter([clientFrame(opcode, payload)], binary: opcode == 2)
        let pieces = meter(fragmented(payload, opcode: opcode, piece: piece), binary: opcode == 2)
        #expect(whole.messages == [payload] && pieces.messages == [payload], "one message, its bytes exact")
        // Growth moves the message a few times over at most (about twice when it doubles), whatever the frames.
        #expect(pieces.moved <= 3 * size, "\(piece)-byte frames moved \(pieces.moved) bytes of a \(size)-byte message")
        if piece >= 16 {
            #expect(pieces.work <= 3 * whole.work,
                    "\(piece)-byte frames: \(pieces.work) bytes of work, one frame: \(whole.work)")
        }
    }

    /// Frames cut anywhere across feeds cost the same too: 16-byte feeds of 16-byte frames.
    @Test func framesSplitAcrossFeedsStayLinear() {
        let payload = [UInt8](repeating: 0x41, count: Self.megabyte)
        let frames = Array(fragmented(payload, opcode: 2, piece: 16).joined())
        let feeds = stride(from: 0, to: frames.count, by: 16).map { Array(frames[$0..<min($0 + 16, frames.count)]) }
        let whole = meter([clientFrame(2, payload)], binary: true)
        let pieces = meter(feeds, binary: true)
        #expect(pieces.messages == [payload] && pieces.moved <= 3 * payload.count)
        #expect(pieces.work <= 3 * whole.work, "16-byte feeds: \(pieces.work), one frame: \(whole.work)")
    }

    /// The HTTP request head, byte by byte, against one chunk (bounded at 8 KiB, but linear all the same).
    @Test func requestHeadByteByByte() {
        let head = Array(("GET /events?subject=a HTTP/1.1\r\nHost: x\r\n"
            + String(repeating: "X-Filler: \(String(repeating: "f", count: 90))\r\n", count: 40) + "\r\n").utf8)
        func run(_ piece: Int) -> Int {
            var parser = HTTPRequestParser()
            var meter = CopyMeter()
            var complete = false
            for start in stride(from: 0, to: head.count, by: piece) {
                let chunk = Array(head[start..<min(start + piece, head.count)])
                let held = parser.bufferedCount
                let outcome = chunk.withUnsafeBytes { parser.feed($0) }
                if case .complete = outcome { complete = true }
                meter.fed(chunk.count, heldBefore: held, capacityAfter: parser.bufferCapacity)
            }
            #expect(complete, "pieces of \(piece)")
            return meter.work
        }
        let whole = run(head.count)
        let bytes = run(1)
        #expect(bytes <= 3 * whole, "byte by byte: \(bytes), one chunk: \(whole)")
    }
}
