import FanoutTestSupport
import FanoutProtocol
import Testing

/// Feeds `input` to a framer in chunks of `chunkSize` and records what comes out.
private func frame(_ input: [UInt8], maxLine: Int, chunkSize: Int) -> [String] {
    var framer = LineFramer(maxLine: maxLine)
    var out: [String] = []
    var start = 0
    while start < input.count {
        let end = min(start + chunkSize, input.count)
        let consumed = input[start..<end].withUnsafeBytes { chunk in
            framer.feed(chunk) { event in
                switch event {
                case .line(let line): out.append(String(decoding: line, as: UTF8.self))
                case .tooLong: out.append("<too-long>")
                case .payload(let payload): out.append("<payload:\(String(decoding: payload, as: UTF8.self))>")
                case .badPayloadEnd: out.append("<bad-end>")
                }
                // "READ n" and "SKIP n" announce a payload, as a BPUB header does.
                if case .line(let line) = event, line.count > 5 {
                    let text = String(decoding: line, as: UTF8.self)
                    let count = Int(text.dropFirst(5)) ?? 0
                    if text.hasPrefix("READ ") { return .readPayload(count) }
                    if text.hasPrefix("SKIP ") { return .skipPayload(count) }
                }
                return .goOn
            }
        }
        #expect(consumed == end - start)
        #expect(framer.bufferedCount <= max(maxLine + 1, 64), "a partial line or payload never grows past its cap")
        start = end
    }
    return out
}

@Suite("LineFramer")
struct LineFramerTests {
    static let mixed = Array("SUB a.b\r\nPUB a.b hello world\n\nPING\r\n".utf8)

    @Test(arguments: Array(1...40))
    func sameLinesWhateverTheChunking(chunkSize: Int) {
        #expect(frame(Self.mixed, maxLine: 64, chunkSize: chunkSize) == ["SUB a.b", "PUB a.b hello world", "", "PING"])
    }

    @Test(arguments: [1, 2, 3, 7, 64, 100, 1000])
    func overlongLineIsReportedOnceAndSkipped(chunkSize: Int) {
        let input = Array("PING a\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 300) + Array("\nPING b\n".utf8)
        #expect(frame(input, maxLine: 100, chunkSize: chunkSize) == ["PING a", "<too-long>", "PING b"])
    }

    @Test(arguments: [1, 5, 50])
    func lineOfExactlyMaxLineIsAccepted(chunkSize: Int) {
        let body = String(repeating: "y", count: 20)
        #expect(frame(Array("\(body)\n".utf8), maxLine: 20, chunkSize: chunkSize) == [body])
        #expect(frame(Array("\(body)\r\n".utf8), maxLine: 20, chunkSize: chunkSize) == [body], "the CR is not counted")
        #expect(frame(Array("\(body)z\n".utf8), maxLine: 20, chunkSize: chunkSize) == ["<too-long>"])
    }

    static let payloads = Array("READ 5\nab\ncd\nPING\nREAD 0\r\n\r\nSKIP 4\nxx\nx\nREAD 3\n\r\n\r\nPING z\n".utf8)

    @Test(arguments: Array(1...60))
    func payloadsWhateverTheChunking(chunkSize: Int) {
        #expect(frame(Self.payloads, maxLine: 64, chunkSize: chunkSize) == [
            "READ 5", "<payload:ab\ncd>", "PING", "READ 0", "<payload:>", "SKIP 4", "READ 3", "<payload:\r\n\r>",
            "PING z",
        ])
    }

    @Test(arguments: [1, 2, 100])
    func payloadsOfLineEndsAreBytesLikeAnyOther(chunkSize: Int) {
        #expect(frame(Array("SKIP 3\n\n\n\n\nPING\nREAD 2\n\n\n\nPING\n".utf8), maxLine: 10, chunkSize: chunkSize)
                == ["SKIP 3", "PING", "READ 2", "<payload:\n\n>", "PING"])
    }

    @Test(arguments: [1, 3, 100])
    func aPayloadLongerThanALineIsTakenWhole(chunkSize: Int) {
        let body = String(repeating: "p", count: 50)
        #expect(frame(Array("READ 50\n\(body)\nPING\n".utf8), maxLine: 10, chunkSize: chunkSize)
                == ["READ 50", "<payload:\(body)>", "PING"])
    }

    @Test(arguments: [1, 2, 100])
    func aByteOtherThanALineEndAfterAPayloadIsReported(chunkSize: Int) {
        #expect(frame(Array("READ 2\nabcPING\n".utf8), maxLine: 10, chunkSize: chunkSize)
                == ["READ 2", "<bad-end>", "cPING"])
        #expect(frame(Array("SKIP 2\nab\rxPING\n".utf8), maxLine: 10, chunkSize: chunkSize)
                == ["SKIP 2", "<bad-end>", "xPING"])
    }

    @Test func aSkippedPayloadIsNeverBuffered() {
        var framer = LineFramer(maxLine: 16)
        let header = Array("SKIP 1000000\n".utf8)
        _ = header.withUnsafeBytes { chunk in framer.feed(chunk) { _ in .skipPayload(1_000_000) } }
        let block = [UInt8](repeating: 0x41, count: 65_536)
        for _ in 0..<15 {
            _ = block.withUnsafeBytes { chunk in framer.feed(chunk) { _ in Issue.record("nothing is complete"); return .goOn } }
            #expect(framer.bufferedCount == 0)
        }
        #expect(framer.isInsidePayload)
    }

    @Test func onlyOneCarriageReturnIsStripped() {
        #expect(frame(Array("a\r\r\n".utf8), maxLine: 10, chunkSize: 100) == ["a\r"])
        #expect(frame(Array("a\rb\n".utf8), maxLine: 10, chunkSize: 100) == ["a\rb"])
    }

    @Test func unterminatedInputStaysBuffered() {
        var framer = LineFramer(maxLine: 10)
        let consumed = Array("PING".utf8).withUnsafeBytes { chunk in
            framer.feed(chunk) { _ in Issue.record("no line is complete"); return .goOn }
        }
        #expect(consumed == 4)
        #expect(framer.bufferedCount == 4)
    }

    @Test func stopsAtALineBoundaryWhenAsked() {
        var framer = LineFramer(maxLine: 10)
        var lines: [String] = []
        let input = Array("one\ntwo\nthree\n".utf8)
        let consumed = input.withUnsafeBytes { chunk in
            framer.feed(chunk) { event in
                if case .line(let line) = event { lines.append(String(decoding: line, as: UTF8.self)) }
                return lines.count < 2 ? .goOn : .stop
            }
        }
        #expect(lines == ["one", "two"])
        #expect(consumed == 8, "bytes after the stop are left for later")
    }

    @Test func randomBytesNeverBreakTheFramer() {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<300 {
            let length = Int(generator.next() % 600)
            let bytes = (0..<length).map { _ -> UInt8 in
                let roll = generator.next() % 10
                return roll == 0 ? 0x0A : UInt8(truncatingIfNeeded: generator.next())
            }
            let chunk = Int(generator.next() % 50) + 1
            let whole = frame(bytes, maxLine: 64, chunkSize: bytes.count + 1)
            let split = frame(bytes, maxLine: 64, chunkSize: chunk)
            #expect(whole == split)
            // One event per LF, plus one for an unterminated tail already known to be too long.
            let tail = bytes.count - 1 - (bytes.lastIndex(of: 0x0A) ?? -1)
            #expect(whole.count == bytes.filter { $0 == 0x0A }.count + (tail > 64 + 1 ? 1 : 0))
        }
    }
}

@Suite("LineFramer's size")
struct LineFramerSizeTests {
    /// A server holds a framer per connection: 21 bytes, so that the connection's one-byte fields after it
    /// fill its last 8-byte slot (payload state included).
    @Test func aFramerTakes21Bytes() {
        #expect(MemoryLayout<LineFramer>.size == 21)
    }
}
