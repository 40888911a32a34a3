/// Splits a byte stream into lines ended by LF, enforcing the line cap with bounded memory, and reads the
/// counted payloads that follow some lines (`BPUB`'s, and `BMSG`'s on the client side).
///
/// Complete lines inside a chunk are handed out without copying; only a line split across chunks is
/// copied, into a buffer that never grows past `maxLine + 1` bytes. A line over the cap is reported once,
/// as soon as it is known to be too long, and the rest of it is skipped up to its LF.
///
/// After a line, the handler may ask for a payload of `n` bytes (`Next.readPayload`): the next `n` bytes, then
/// LF or CRLF, are one `.payload` event, handed out without copying when they lie in one chunk and otherwise
/// gathered into a buffer of at most `n` bytes. A payload the handler refused (`Next.skipPayload`) is
/// discarded as it streams in, never buffered. Anything but LF or CRLF after a payload is `.badPayloadEnd`.
public struct LineFramer {
    /// What the framer found.
    public enum Event {
        /// One line, LF and a CR before it removed. The bytes are valid only during the handler call.
        case line(UnsafeRawBufferPointer)
        /// A line longer than `maxLine` bytes; its bytes are being discarded up to the next LF.
        case tooLong
        /// The payload asked for after a line, its LF or CRLF removed. Valid only during the handler call.
        case payload(UnsafeRawBufferPointer)
        /// A payload (read or skipped) was followed by a byte that is neither LF nor CRLF: the stream's framing
        /// is lost. The framer reads lines again from that byte on.
        case badPayloadEnd
    }

    /// What the handler wants after an event.
    public enum Next: Equatable, Sendable {
        /// Go on with the chunk.
        case goOn
        /// Stop here (backpressure); the rest of the chunk is not consumed.
        case stop
        /// The line announced a payload of this many bytes: read it next (after a `.line` only).
        case readPayload(Int)
        /// The line announced a payload that is refused: discard this many bytes and their line end, unbuffered.
        case skipPayload(Int)
    }

    // Packed, since a server holds a framer per connection: 21 bytes, which the connection's one-byte fields
    // after it fill up to the next 8. The unfinished line and a payload split across chunks share `partial`
    // (a payload starts only after a complete line), and the mode is `flags`.
    private var partial: [UInt8] = []
    /// Payload bytes still to come, in a payload.
    private var payloadLeft = 0
    private var maxLineStorage: Int32
    private var flags: UInt8 = 0

    private static let discardingFlag: UInt8 = 1 << 0
    /// In a payload (or its line end).
    private static let payloadFlag: UInt8 = 1 << 1
    /// The payload is read, not dropped.
    private static let keepFlag: UInt8 = 1 << 2
    /// The payload's bytes are all in; its LF (after an optional CR) is next.
    private static let endFlag: UInt8 = 1 << 3
    private static let sawCRFlag: UInt8 = 1 << 4

    /// Longest accepted line in bytes, LF and the CR before it excluded. May change between feeds (reload).
    public var maxLine: Int {
        get { Int(maxLineStorage) }
        set { maxLineStorage = Int32(clamping: newValue) }
    }

    private var discarding: Bool {
        get { flags & Self.discardingFlag != 0 }
        set { flags = newValue ? flags | Self.discardingFlag : flags & ~Self.discardingFlag }
    }

    public init(maxLine: Int) {
        precondition(maxLine > 0, "maxLine must be positive")
        self.maxLineStorage = Int32(clamping: maxLine)
    }

    /// Bytes held from an unfinished line (at most `maxLine + 1`) or an unfinished payload (at most its length).
    public var bufferedCount: Int { partial.count }

    /// The bytes its buffer can hold before it grows: how a test counts the moves growth costs.
    public var bufferCapacity: Int { partial.capacity }

    /// The bytes of the unfinished line held so far.
    public var pendingBytes: [UInt8] { flags & Self.payloadFlag == 0 ? partial : [] }

    /// Whether the framer is inside a payload (or its line end) rather than between lines.
    public var isInsidePayload: Bool { flags & Self.payloadFlag != 0 }

    /// Whether a payload's bytes are all in and only its line end is still to come.
    public var awaitsPayloadEnd: Bool { flags & Self.endFlag != 0 }

    /// Back to reading lines, keeping only `discarding`.
    private mutating func endPayload() {
        flags &= Self.discardingFlag
        payloadLeft = 0
    }

    /// Feeds one chunk. `handler` returns `.stop` to stop early (backpressure); the return value is how many
    /// bytes of `chunk` were consumed, always up to a line or payload boundary when stopped early.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ handler: (Event) -> Next) -> Int {
        var position = 0
        let count = chunk.count
        guard let base = chunk.baseAddress else { return 0 }
        while position < count {
            if flags & Self.payloadFlag != 0 {
                let keep = flags & Self.keepFlag != 0
                if flags & Self.endFlag == 0 {
                    let remaining = payloadLeft
                    let available = count - position
                    if keep && partial.isEmpty && available > remaining {
                        // The whole payload and the byte after it are in this chunk: hand it out in place.
                        let end = position + remaining
                        let after = base.load(fromByteOffset: end, as: UInt8.self)
                        var lineEnd: Int?
                        var later = false
                        if after == 0x0A {
                            lineEnd = end + 1
                        } else if after == 0x0D && end + 1 < count {
                            if base.load(fromByteOffset: end + 1, as: UInt8.self) == 0x0A { lineEnd = end + 2 }
                        } else if after == 0x0D {
                            later = true  // the LF is in the next chunk: gather below
                        }
                        if let lineEnd {
                            endPayload()
                            let next = handler(.payload(UnsafeRawBufferPointer(start: base + position, count: remaining)))
                            position = lineEnd
                            if next == .stop { return position }
                            continue
                        }
                        if !later {
                            endPayload()
                            position = end
                            if handler(.badPayloadEnd) == .stop { return position }
                            continue
                        }
                    }
                    let take = min(remaining, available)
                    if keep {
                        // Exactly the payload's size, made once: growing by doubling would hold up to twice what
                        // the server counts for it toward max_memory.
                        if partial.isEmpty { partial.reserveCapacity(remaining) }
                        partial.append(contentsOf: UnsafeRawBufferPointer(start: base + position, count: take))
                    }
                    position += take
                    payloadLeft = remaining - take
                    if payloadLeft == 0 { flags |= Self.endFlag }
                    continue
                }
                let byte = base.load(fromByteOffset: position, as: UInt8.self)
                if byte == 0x0D && flags & Self.sawCRFlag == 0 {
                    flags |= Self.sawCRFlag
                    position += 1
                    continue
                }
                endPayload()
                guard byte == 0x0A else {
                    partial.removeAll(keepingCapacity: false)
                    if handler(.badPayloadEnd) == .stop { return position }
                    continue
                }
                position += 1
                guard keep else { continue }
                let next = partial.withUnsafeBytes { handler(.payload($0)) }
                partial.removeAll(keepingCapacity: partial.capacity <= 4096)
                if next == .stop { return position }
                continue
            }
            let remaining = count - position
            let newline = memchrIndex(base + position, remaining)
            guard let newline else {
                absorbPartial(UnsafeRawBufferPointer(start: base + position, count: remaining), handler)
                return count
            }
            let lineEnd = position + newline
            let next: Next
            if discarding {
                discarding = false
                next = .goOn
            } else if partial.isEmpty {
                next = emit(UnsafeRawBufferPointer(start: base + position, count: lineEnd - position), handler)
            } else {
                let head = UnsafeRawBufferPointer(start: base + position, count: lineEnd - position)
                if partial.count + head.count > maxLine + 1 {
                    partial.removeAll(keepingCapacity: false)
                    next = handler(.tooLong)
                } else {
                    partial.append(contentsOf: head)
                    next = partial.withUnsafeBytes { emit($0, handler) }
                    partial.removeAll(keepingCapacity: true)
                }
            }
            position = lineEnd + 1
            switch next {
            case .goOn: break
            case .stop: return position
            case .readPayload(let length):
                flags |= Self.payloadFlag | Self.keepFlag
                payloadLeft = max(0, length)
                if payloadLeft == 0 { flags |= Self.endFlag }
            case .skipPayload(let length):
                flags |= Self.payloadFlag
                payloadLeft = max(0, length)
                if payloadLeft == 0 { flags |= Self.endFlag }
            }
        }
        return count
    }

    private mutating func absorbPartial(_ tail: UnsafeRawBufferPointer, _ handler: (Event) -> Next) {
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

    private func emit(_ rawLine: UnsafeRawBufferPointer, _ handler: (Event) -> Next) -> Next {
        var line = rawLine
        if let last = line.last, last == UInt8(ascii: "\r") {
            line = UnsafeRawBufferPointer(rebasing: line.dropLast())
        }
        if line.count > maxLine {
            // A too-long line announces nothing: a payload request after it would misread the stream.
            let next = handler(.tooLong)
            return next == .stop ? .stop : .goOn
        }
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
