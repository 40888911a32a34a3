/// Walks the server's output for a client as the transports that frame it see it: LF-ended lines, and
/// `BMSG` pushes whose payload may hold any byte (LF included) and so is not a line.
public enum ServerOutput {
    /// One unit of output.
    public enum Unit {
        /// A line, its LF removed.
        case line(UnsafeRawBufferPointer)
        /// A `BMSG <subject> <seq> <length>` push: its header line (LF removed), its payload, and the whole
        /// push as written (header, LF, payload, LF), for transports that carry it as one binary message.
        case binary(header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, whole: UnsafeRawBufferPointer)
    }

    private static let binaryVerb: [UInt8] = Array("BMSG ".utf8)

    /// Calls `body` with each unit of `output`, in order. Output the server wrote is whole units; a stray tail
    /// without its LF is handed out as a line.
    public static func forEachUnit(in output: UnsafeRawBufferPointer, _ body: (Unit) -> Void) {
        guard let base = output.baseAddress else { return }
        var start = 0
        let count = output.count
        while start < count {
            let rest = count - start
            let lineLength = memchr(base + start, 0x0A, rest).map { (base + start).distance(to: UnsafeRawPointer($0)) } ?? rest
            let header = UnsafeRawBufferPointer(start: base + start, count: lineLength)
            if let length = binaryLength(header), start + lineLength + 1 + length + 1 <= count {
                let payloadStart = start + lineLength + 1
                let end = payloadStart + length + 1
                body(.binary(header: header,
                             payload: UnsafeRawBufferPointer(start: base + payloadStart, count: length),
                             whole: UnsafeRawBufferPointer(start: base + start, count: end - start)))
                start = end
                continue
            }
            body(.line(header))
            start += lineLength + 1
        }
    }

    /// The length a `BMSG` header announces, or nil when `line` is not one.
    public static func binaryLength(_ line: UnsafeRawBufferPointer) -> Int? {
        guard line.count > binaryVerb.count else { return nil }
        for index in 0..<binaryVerb.count where line[index] != binaryVerb[index] { return nil }
        let end = line.count
        var start = end
        while start > 0 && line[start - 1] >= UInt8(ascii: "0") && line[start - 1] <= UInt8(ascii: "9") { start -= 1 }
        guard start < end, start > binaryVerb.count, line[start - 1] == UInt8(ascii: " "),
              let length = DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: line[start..<end])),
              length <= UInt64(Int.max / 2) else { return nil }
        return Int(length)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
