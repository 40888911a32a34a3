/// Splits a byte stream into lines ended by LF, enforcing the line cap with bounded memory.
///
/// Complete lines inside a chunk are handed out without copying; only a line split across chunks is
/// copied, into a buffer that never grows past `maxLine + 1` bytes. A line over the cap is reported once,
/// as soon as it is known to be too long, and the rest of it is skipped up to its LF.
public struct LineFramer {
    /// What the framer found.
    public enum Event {
        /// One line, LF and a CR before it removed. The bytes are valid only during the handler call.
        case line(UnsafeRawBufferPointer)
        /// A line longer than `maxLine` bytes; its bytes are being discarded up to the next LF.
        case tooLong
    }

    /// Longest accepted line in bytes, LF and the CR before it excluded. May change between feeds (reload).
    public var maxLine: Int
    private var partial: [UInt8] = []
    private var discarding = false

    public init(maxLine: Int) {
        precondition(maxLine > 0, "maxLine must be positive")
        self.maxLine = maxLine
    }

    /// Bytes held from an unfinished line (at most `maxLine + 1`).
    public var bufferedCount: Int { partial.count }

    /// The bytes of the unfinished line held so far.
    public var pendingBytes: [UInt8] { partial }

    /// Feeds one chunk. `handler` returns false to stop early (backpressure); the return value is how many
    /// bytes of `chunk` were consumed, always up to a line boundary when stopped early.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ handler: (Event) -> Bool) -> Int {
        var position = 0
        let count = chunk.count
        guard let base = chunk.baseAddress else { return 0 }
        while position < count {
            let remaining = count - position
            let newline = memchrIndex(base + position, remaining)
            guard let newline else {
                absorbPartial(UnsafeRawBufferPointer(start: base + position, count: remaining), handler)
                return count
            }
            let lineEnd = position + newline
            let keepGoing: Bool
            if discarding {
                discarding = false
                keepGoing = true
            } else if partial.isEmpty {
                keepGoing = emit(UnsafeRawBufferPointer(start: base + position, count: lineEnd - position), handler)
            } else {
                let head = UnsafeRawBufferPointer(start: base + position, count: lineEnd - position)
                if partial.count + head.count > maxLine + 1 {
                    partial.removeAll(keepingCapacity: false)
                    keepGoing = handler(.tooLong)
                } else {
                    partial.append(contentsOf: head)
                    keepGoing = partial.withUnsafeBytes { emit($0, handler) }
                    partial.removeAll(keepingCapacity: true)
                }
            }
            position = lineEnd + 1
            if !keepGoing { return position }
        }
        return count
    }

    private mutating func absorbPartial(_ tail: UnsafeRawBufferPointer, _ handler: (Event) -> Bool) {
        if discarding { return }
        // maxLine + 1 leaves room for the CR of a CRLF line of exactly maxLine bytes.
        if partial.count + tail.count > maxLine + 1 {
            partial.removeAll(keepingCapacity: false)
            discarding = true
            // The too-long report does not consume a line, so a stop request here changes nothing.
            _ = handler(.tooLong)
        } else {
            partial.append(contentsOf: tail)
        }
    }

    private func emit(_ rawLine: UnsafeRawBufferPointer, _ handler: (Event) -> Bool) -> Bool {
        var line = rawLine
        if let last = line.last, last == UInt8(ascii: "\r") {
            line = UnsafeRawBufferPointer(rebasing: line.dropLast())
        }
        if line.count > maxLine { return handler(.tooLong) }
        return handler(.line(line))
    }

    private func memchrIndex(_ start: UnsafeRawPointer, _ count: Int) -> Int? {
        guard let found = memchr(start, 0x0A, count) else { return nil }
        return start.distance(to: UnsafeRawPointer(found))
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
