/// The parts of a `MSG <subject> <seq> <payload>` line, borrowing its bytes: the one parser of pushes,
/// for clients, load generators and tests alike.
public struct MessageLine {
    /// The concrete subject the message was published to.
    public let subject: UnsafeRawBufferPointer
    public let seq: UInt64
    /// Every byte after the space that follows the seq (possibly none).
    public let payload: UnsafeRawBufferPointer

    static let prefix: [UInt8] = Array("MSG ".utf8)

    /// Whether `line` starts as a push does, before any further checks.
    @inlinable
    public static func looksLikeMessage(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count > 4 && line[0] == UInt8(ascii: "M") && line[1] == UInt8(ascii: "S") && line[2] == UInt8(ascii: "G")
            && line[3] == UInt8(ascii: " ")
    }

    /// Parses a line without its LF; nil when it is not a well-formed `MSG` line.
    public init?(_ line: UnsafeRawBufferPointer) {
        guard Self.looksLikeMessage(line), let subjectEnd = line[4...].firstIndex(of: UInt8(ascii: " ")),
              subjectEnd > 4, case let (seq, seqEnd)? = DecimalDigits.scan(line, from: subjectEnd + 1),
              seqEnd == line.count || line[seqEnd] == UInt8(ascii: " ") else { return nil }
        subject = UnsafeRawBufferPointer(rebasing: line[4..<subjectEnd])
        self.seq = seq
        payload = UnsafeRawBufferPointer(rebasing: line[min(seqEnd + 1, line.count)...])
    }
}
