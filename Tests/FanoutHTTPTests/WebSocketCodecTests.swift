import FanoutHTTP
import FanoutProtocol
import FanoutTestSupport
import Testing

/// A client frame: masked with `mask`, as browsers send them.
func clientFrame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, mask: [UInt8] = [1, 2, 3, 4], masked: Bool = true) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    let maskBit: UInt8 = masked ? 0x80 : 0
    if payload.count < 126 {
        out.append(maskBit | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        out.append(maskBit | 127)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
    }
    guard masked else { return out + payload }
    out += mask
    for (index, byte) in payload.enumerated() { out.append(byte ^ mask[index & 3]) }
    return out
}

/// What the decoder made of `input`, fed in chunks of `chunkSize`.
func decode(_ input: [UInt8], maxMessage: Int = 100, chunkSize: Int = .max) -> [String] {
    var decoder = WebSocketDecoder(maxMessage: maxMessage)
    var out: [String] = []
    var start = 0
    while start < input.count {
        let end = min(start + chunkSize, input.count)
        var offset = start
        while offset < end {
            let consumed = input[offset..<end].withUnsafeBytes { chunk in
                decoder.feed(chunk) { event in
                    switch event {
                    case .text(let bytes): out.append("text:" + String(decoding: bytes, as: UTF8.self))
                    case .binary(let bytes): out.append("binary:" + String(decoding: bytes, as: UTF8.self))
                    case .binaryTooLong: out.append("binaryTooLong")
                    case .binaryRefused: out.append("binaryRefused")
                    case .ping(let bytes): out.append("ping:" + String(decoding: bytes, as: UTF8.self))
                    case .pong: out.append("pong")
                    case .close(let code): out.append("close:\(code.map(String.init) ?? "none")")
                    case .failure(let code, _): out.append("fail:\(code)")
                    case .tooLong(let limit): out.append("tooLong:\(limit)")
                    }
                    return true
                }
            }
            #expect(consumed > 0 || offset == end)
            offset += consumed
            if consumed == 0 { break }
        }
        #expect(decoder.bufferedCount <= maxMessage + 125 + 14)
        start = end
    }
    return out
}

@Suite("WebSocket framing")
struct WebSocketCodecTests {
    @Test func textRoundTripAtEveryChunking() {
        let input = clientFrame(1, Array("PUB a hello".utf8)) + clientFrame(9, Array("hi".utf8)) + clientFrame(1, Array("PING".utf8))
        for size in [1, 2, 3, 7, 1000] {
            #expect(decode(input, chunkSize: size) == ["text:PUB a hello", "ping:hi", "text:PING"], "chunk \(size)")
        }
    }

    @Test func lengthsOf16And64Bits() {
        let medium = [UInt8](repeating: UInt8(ascii: "x"), count: 300)
        let large = [UInt8](repeating: UInt8(ascii: "y"), count: 70_000)
        #expect(decode(clientFrame(1, medium), maxMessage: 1000) == ["text:" + String(repeating: "x", count: 300)])
        #expect(decode(clientFrame(1, large), maxMessage: 80_000, chunkSize: 4096) == ["text:" + String(repeating: "y", count: 70_000)])
    }

    @Test func fragmentsJoinWithControlFramesBetween() {
        let input = clientFrame(1, Array("PUB a ".utf8), fin: false) + clientFrame(9, [], fin: true)
            + clientFrame(0, Array("hel".utf8), fin: false) + clientFrame(0, Array("lo".utf8))
        #expect(decode(input, chunkSize: 3) == ["ping:", "text:PUB a hello"])
    }

    @Test func closeCodes() {
        #expect(decode(clientFrame(2, [1, 2])) == ["fail:1003"], "binary")
        #expect(decode(clientFrame(1, [0xC3, 0x28])) == ["fail:1007"], "invalid UTF-8")
        #expect(decode(clientFrame(1, [0xED, 0xA0, 0x80])) == ["fail:1007"], "a surrogate")
        #expect(decode(clientFrame(1, [UInt8](repeating: 65, count: 101))) == ["tooLong:100"], "over max")
        #expect(decode(clientFrame(1, [UInt8](repeating: 65, count: 60), fin: false) + clientFrame(0, [UInt8](repeating: 65, count: 60)))
                == ["tooLong:100"], "fragments over max together")
        #expect(decode(clientFrame(1, Array("x".utf8), masked: false)) == ["fail:1002"], "unmasked")
        #expect(decode([0x81 | 0x40, 0x80, 0, 0, 0, 0]) == ["fail:1002"], "reserved bit")
        #expect(decode(clientFrame(3, [])) == ["fail:1002"], "unknown opcode")
        #expect(decode(clientFrame(9, [], fin: false)) == ["fail:1002"], "fragmented ping")
        #expect(decode(clientFrame(9, [UInt8](repeating: 0, count: 126))) == ["fail:1002"], "long ping")
        #expect(decode(clientFrame(0, Array("x".utf8))) == ["fail:1002"], "stray continuation")
        #expect(decode(clientFrame(8, [0x03, 0xE8])) == ["close:1000"])
        #expect(decode(clientFrame(8, [])) == ["close:none"])
        #expect(decode(clientFrame(8, [0x03])) == ["fail:1002"], "1-byte close")
        #expect(decode(clientFrame(8, [0x03, 0xED])) == ["fail:1002"], "close code 1005 may not be sent")
    }

    @Test func nothingAfterClose() {
        #expect(decode(clientFrame(8, [0x03, 0xE8]) + clientFrame(1, Array("PING".utf8))) == ["close:1000"])
    }

    @Test func hugeLengthFailsAtTheHeader() {
        // 2^62 bytes announced: refused before any payload, with nothing buffered.
        #expect(decode([0x81, 0xFF, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]) == ["tooLong:100"])
        #expect(decode([0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]) == ["fail:1002"])
    }

    @Test func encoderFramesEachLine() {
        let frames = WebSocketEncoder.textFrames(lines: Array("MSG a 1 x\nMSG a 2 yy\n".utf8))
        #expect(frames == [0x81, 9] + Array("MSG a 1 x".utf8) + [0x81, 10] + Array("MSG a 2 yy".utf8))
        let long = WebSocketEncoder.textFrames(lines: [UInt8](repeating: 65, count: 200) + [10])
        #expect(Array(long.prefix(4)) == [0x81, 126, 0, 200])
        let huge = WebSocketEncoder.textFrames(lines: [UInt8](repeating: 65, count: 70_000))
        #expect(Array(huge.prefix(10)) == [0x81, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70])
        #expect(WebSocketEncoder.closeFrame(code: 1009, reason: "big") == [0x88, 5, 0x03, 0xF1] + Array("big".utf8))
        #expect(WebSocketEncoder.closeFrame(code: 1000, reason: String(repeating: "é", count: 100)).count <= 127)
    }

    @Test func randomInputNeverBreaksTheBounds() {
        var generator = SeededGenerator(seed: 17)
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<64, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let out = decode(bytes, maxMessage: 50, chunkSize: Int.random(in: 1...8, using: &generator))
            #expect(out.filter { $0.hasPrefix("fail") || $0.hasPrefix("close") || $0.hasPrefix("tooLong") }.count <= 1)
        }
    }

    @Test func utf8Validation() {
        let valid: [[UInt8]] = [Array("héllo €𝄞".utf8), [], [0x7F], [0xF4, 0x8F, 0xBF, 0xBF]]
        let invalid: [[UInt8]] = [[0x80], [0xC0, 0xAF], [0xE0, 0x80, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF]]
        for bytes in valid { #expect(bytes.withUnsafeBytes { UTF8Validation.isValid($0) }, "\(bytes)") }
        for bytes in invalid { #expect(!bytes.withUnsafeBytes { UTF8Validation.isValid($0) }, "\(bytes)") }
    }
}
