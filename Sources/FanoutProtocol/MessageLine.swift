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

/// The header of a `BMSG <subject> <seq> <length>` push (1.2), borrowing its bytes: `length` payload bytes and
/// a LF follow it.
public struct BinaryMessageHeader {
    public let subject: UnsafeRawBufferPointer
    public let seq: UInt64
    public let length: Int

    /// Parses a line without its LF; nil when it is not a well-formed `BMSG` header.
    public init?(_ line: UnsafeRawBufferPointer) {
        guard line.starts(with: "BMSG ".utf8), let (words, rest) = PushWords.split(line, words: 4), rest.isEmpty,
              !words[1].isEmpty, let seq = DecimalDigits.parse(words[2]),
              let length = DecimalDigits.parse(words[3]), length <= UInt64(Int.max / 2) else { return nil }
        subject = words[1]
        self.seq = seq
        self.length = Int(length)
    }
}

/// Splits a push into its leading words, each ended by one space, and the rest of the line: the payload of
/// `MSG`, `ASK` and `ANSWER` is every byte after the space that ends the last word.
enum PushWords {
    /// The first `count` words and what follows the space after the last one (empty when the line ends there).
    /// Nil when the line has fewer words, or an empty one (two spaces in a row).
    static func split(_ line: UnsafeRawBufferPointer, words count: Int)
        -> (words: [UnsafeRawBufferPointer], rest: UnsafeRawBufferPointer)? {
        var words: [UnsafeRawBufferPointer] = []
        words.reserveCapacity(count)
        var start = 0
        while words.count < count {
            let end = line[start...].firstIndex(of: UInt8(ascii: " ")) ?? line.count
            guard end > start else { return nil }
            words.append(UnsafeRawBufferPointer(rebasing: line[start..<end]))
            start = end + 1
            if end == line.count && words.count < count { return nil }
        }
        return (words, UnsafeRawBufferPointer(rebasing: line[min(start, line.count)...]))
    }
}
