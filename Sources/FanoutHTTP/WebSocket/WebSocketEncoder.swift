#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds the server's frames (RFC 6455 §5.2): unmasked, unfragmented, one text frame per protocol line.
///
/// Pure: no I/O. A batch of `MSG` lines is framed once and the same bytes go to every WebSocket subscriber.
public enum WebSocketEncoder {
    /// Appends one frame of `opcode` carrying `payload`.
    public static func appendFrame(_ opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendHeader(opcode, length: payload.count, to: &out)
        out.append(contentsOf: payload)
    }

    public static func appendFrame(_ opcode: WebSocketOpcode, payload: [UInt8], to out: inout [UInt8]) {
        payload.withUnsafeBytes { appendFrame(opcode, payload: $0, to: &out) }
    }

    /// Appends one text frame per line of `lines` (LF-ended protocol lines): each frame holds a line without
    /// its LF. A last line without LF is framed too. Cost: one pass over `lines`, 2 to 10 bytes per line.
    public static func appendTextFrames(lines: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        guard let base = lines.baseAddress else { return }
        var start = 0
        let count = lines.count
        out.reserveCapacity(out.count + count + 4 * 8)
        while start < count {
            let end = memchr(base + start, 0x0A, count - start).map { base.distance(to: UnsafeRawPointer($0)) } ?? count
            appendFrame(.text, payload: UnsafeRawBufferPointer(start: base + start, count: end - start), to: &out)
            start = end + 1
        }
    }

    /// `appendTextFrames` into a new array.
    public static func textFrames(lines: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        lines.withUnsafeBytes { appendTextFrames(lines: $0, to: &out) }
        return out
    }

    /// A close frame with `code` and a reason cut to fit the 125-byte control payload (at a UTF-8 boundary).
    public static func closeFrame(code: UInt16, reason: String = "") -> [UInt8] {
        var payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        var text = Array(reason.utf8.prefix(123))
        // Drop a cut multi-byte character: continuation bytes at the end without their lead.
        if text.count == 123 {
            while let last = text.last, last & 0xC0 == 0x80 { text.removeLast() }
            if let last = text.last, last >= 0xC0 { text.removeLast() }
        }
        payload.append(contentsOf: text)
        var out: [UInt8] = []
        appendFrame(.close, payload: payload, to: &out)
        return out
    }

    private static func appendHeader(_ opcode: WebSocketOpcode, length: Int, to out: inout [UInt8]) {
        out.append(0x80 | opcode.rawValue)
        if length < 126 {
            out.append(UInt8(length))
        } else if length <= 0xFFFF {
            out.append(126)
            out.append(UInt8(length >> 8))
            out.append(UInt8(length & 0xFF))
        } else {
            out.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF)) }
        }
    }
}
