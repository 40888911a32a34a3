#if canImport(Glibc)
import Glibc
#endif

/// Builds server lines. Every line ends in LF.
public enum Encoder {
    /// `+HELLO fanout/1 <server-name> auth=none|required epoch=<token>`
    public static func greeting(serverName: String, authRequired: Bool, epoch: String) -> String {
        "+HELLO fanout/1 \(serverName) auth=\(authRequired ? "required" : "none") epoch=\(epoch)\n"
    }

    /// `+OK` or `+OK <text>`.
    public static func ok(_ text: String = "") -> String {
        text.isEmpty ? "+OK\n" : "+OK \(text)\n"
    }

    /// Appends `MSG <subject> <seq> <payload>\n` to `buffer` without intermediate strings.
    public static func appendMessage(
        subject: UnsafeRawBufferPointer,
        seq: UInt64,
        payload: UnsafeRawBufferPointer,
        to buffer: inout [UInt8]
    ) {
        buffer.append(contentsOf: messagePrefix)
        buffer.append(contentsOf: subject)
        buffer.append(CommandParser.space)
        DecimalDigits.append(seq, to: &buffer)
        buffer.append(CommandParser.space)
        buffer.append(contentsOf: payload)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Whether a line can carry `payload` as `MSG`'s last field: no LF, and at most `maxLine` bytes. Any other
    /// payload (published with `BPUB`) is pushed as `BMSG`.
    @inline(__always)
    public static func lineCarries(_ payload: UnsafeRawBufferPointer, maxLine: Int) -> Bool {
        guard payload.count <= maxLine, let base = payload.baseAddress else { return payload.count <= maxLine }
        return memchr(base, 0x0A, payload.count) == nil
    }

    /// Appends the push of a message in the form a line client can read: `MSG` when a line carries the payload,
    /// else `BMSG <subject> <seq> <length>`, LF, the bytes, LF. History replays use it too, so a message is
    /// replayed in the form it was first pushed.
    public static func appendPush(
        subject: UnsafeRawBufferPointer,
        seq: UInt64,
        payload: UnsafeRawBufferPointer,
        maxLine: Int,
        to buffer: inout [UInt8]
    ) {
        if lineCarries(payload, maxLine: maxLine) {
            return appendMessage(subject: subject, seq: seq, payload: payload, to: &buffer)
        }
        buffer.append(contentsOf: binaryPrefix)
        buffer.append(contentsOf: subject)
        buffer.append(CommandParser.space)
        DecimalDigits.append(seq, to: &buffer)
        buffer.append(CommandParser.space)
        DecimalDigits.append(UInt64(payload.count), to: &buffer)
        buffer.append(UInt8(ascii: "\n"))
        buffer.append(contentsOf: payload)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends `RESET <subject> epoch=<epoch> seq=<seq> missed=<missed|unknown>\n`: the subject's numbering
    /// restarted, or messages were lost; the next `MSG` of the subject has seq `seq + 1`.
    public static func appendReset(
        subject: UnsafeRawBufferPointer,
        epoch: String,
        seq: UInt64,
        missed: UInt64?,
        to buffer: inout [UInt8]
    ) {
        buffer.append(contentsOf: resetPrefix)
        buffer.append(contentsOf: subject)
        buffer.append(contentsOf: " epoch=".utf8)
        buffer.append(contentsOf: epoch.utf8)
        buffer.append(contentsOf: " seq=".utf8)
        DecimalDigits.append(seq, to: &buffer)
        buffer.append(contentsOf: " missed=".utf8)
        if let missed { DecimalDigits.append(missed, to: &buffer) } else { buffer.append(contentsOf: "unknown".utf8) }
        buffer.append(UInt8(ascii: "\n"))
    }

    private static let messagePrefix: [UInt8] = Array("MSG ".utf8)
    private static let binaryPrefix: [UInt8] = Array("BMSG ".utf8)
    private static let resetPrefix: [UInt8] = Array("RESET ".utf8)
}
