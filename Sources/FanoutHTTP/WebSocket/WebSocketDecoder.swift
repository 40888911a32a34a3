import FanoutProtocol

/// Reads a client's frames (RFC 6455 §5) from a byte stream and hands out whole text messages, pings, pongs
/// and the close, or the first framing failure with the close code it calls for.
///
/// Pure: no I/O, like `LineFramer`. Memory is bounded: a message (all its fragments) is held only up to
/// `maxMessage` bytes, a frame that would pass that fails at its header (1009) before any of its payload is
/// read, and control frames hold at most 125 bytes. After a close or a failure the rest of the input is
/// ignored.
public struct WebSocketDecoder {
    public enum Event {
        /// One whole text message, unmasked, defragmented and valid UTF-8. Valid only during the handler call.
        case text(UnsafeRawBufferPointer)
        /// One whole binary message, unmasked and defragmented (only when `maxBinaryMessage` > 0). Valid only
        /// during the handler call.
        case binary(UnsafeRawBufferPointer)
        /// A binary message over `maxBinaryMessage`: its bytes were dropped as they came, never held.
        case binaryTooLong
        /// `admit` refused to let a binary message's buffer grow: what was held of it is let go, and its
        /// remaining frames are read and dropped. Given once, when refused, not at the message's end.
        case binaryRefused
        /// A ping: its payload (at most 125 bytes) is to be echoed in a pong.
        case ping(UnsafeRawBufferPointer)
        case pong
        /// The client's close frame: its code when it gave one.
        case close(code: UInt16?)
        /// The input broke the protocol: close with `code`, saying `reason`.
        case failure(code: UInt16, reason: String)
        /// A message (all its fragments together) would pass `limit` (`maxMessage`) bytes: close with
        /// `WebSocketCloseCode.messageTooBig`. The reason is the caller's to word, since only it knows what the
        /// limit stands for (a server's line limit plus a line end, say).
        case tooLong(limit: Int)
    }

    /// Longest text message accepted, all fragments together. May change between feeds (reload).
    public var maxMessage: Int
    /// Longest binary message accepted; 0 refuses binary frames (close 1003). May change between feeds.
    public var maxBinaryMessage = 0
    /// Whether a close or a failure has been read: nothing more is decoded.
    public private(set) var isFinished = false

    private var header: [UInt8] = []
    private var frame: Frame?
    /// The text message being assembled, over its fragments.
    private var message: [UInt8] = []
    /// Whether a fragmented text message is in progress (its first frame had FIN clear).
    private var inFragmentedMessage = false
    /// Whether the message being assembled is binary.
    private var messageIsBinary = false
    /// The binary message in progress is over its limit: its frames are read and dropped.
    private var discardingMessage = false
    /// Whether that message was refused by `admit` (its end then needs no event), not over its limit.
    private var refusedMessage = false
    /// `.binaryRefused` is due: given as soon as the refused frame's header is read.
    private var refusalDue = false
    /// Bytes `admit` agreed to for the binary message buffer and still held: the buffer's capacity as reserved.
    /// At most `maxBinaryMessage`; 0 once a buffer larger than `keptCapacity` is given back.
    public private(set) var admittedBytes = 0
    private var control: [UInt8] = []

    private struct Frame {
        var opcode: WebSocketOpcode
        var fin: Bool
        var remaining: Int
        var mask: (UInt8, UInt8, UInt8, UInt8)
        var maskOffset = 0
    }

    /// Buffers kept between messages up to this capacity; a larger one is given back after its message.
    private static let keptCapacity = 4096

    public init(maxMessage: Int) {
        precondition(maxMessage > 0, "maxMessage must be positive")
        self.maxMessage = maxMessage
    }

    /// Bytes held from unfinished frames (at most `maxMessage` + 125 + 14).
    public var bufferedCount: Int { header.count + message.count + control.count }

    /// The bytes its buffers can hold before they grow: how a test counts the moves growth costs.
    public var bufferCapacity: Int { header.capacity + message.capacity + control.capacity }

    /// Feeds one chunk. `handler` returns false to stop after an event (backpressure); the return value is
    /// how many bytes of `chunk` were consumed. `admit` is asked, when a binary frame's header is read, for
    /// the bytes the message buffer must grow by to take the frame's announced length (growth is geometric, up
    /// to `maxBinaryMessage`, so a message of small frames asks O(log) times); false refuses the message
    /// (`.binaryRefused`). Cost: linear in the chunk, O(1) per frame for `admit`.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, admit: (Int) -> Bool = { _ in true },
                              _ handler: (Event) -> Bool) -> Int {
        guard let base = chunk.baseAddress else { return 0 }
        let count = chunk.count
        var position = 0
        while position < count && !isFinished {
            if frame == nil {
                let taken = readHeader(UnsafeRawBufferPointer(start: base + position, count: count - position),
                                       admit: admit)
                position += taken.consumed
                if let ending = taken.failure { return fail(ending, handler, count) }
                if refusalDue {
                    refusalDue = false
                    if !handler(.binaryRefused) { return position }
                }
                guard frame != nil else { continue }
            }
            guard var current = frame else { continue }
            let take = min(current.remaining, count - position)
            if take > 0 {
                let source = UnsafeRawBufferPointer(start: base + position, count: take)
                if current.opcode.isControl {
                    Self.unmask(source, &current, into: &control)
                } else if discardingMessage {
                    current.maskOffset = (current.maskOffset + take) & 3
                } else {
                    Self.unmask(source, &current, into: &message)
                }
                current.remaining -= take
                position += take
            }
            frame = current
            guard current.remaining == 0 else { continue }
            frame = nil
            if !finishFrame(current, handler) { return isFinished ? count : position }
        }
        return count
    }

    /// Completes a frame whose payload is all read; returns the handler's wish to go on.
    private mutating func finishFrame(_ done: Frame, _ handler: (Event) -> Bool) -> Bool {
        switch done.opcode {
        case .text, .continuation, .binary:
            guard done.fin else {
                inFragmentedMessage = true
                return true
            }
            inFragmentedMessage = false
            if discardingMessage {
                discardingMessage = false
                resetMessage()
                if refusedMessage {
                    refusedMessage = false
                    return true
                }
                return handler(.binaryTooLong)
            }
            if messageIsBinary {
                let goOn = message.withUnsafeBytes { handler(.binary($0)) }
                resetMessage()
                return goOn
            }
            let valid = message.withUnsafeBytes { UTF8Validation.isValid($0) }
            guard valid else {
                _ = fail((WebSocketCloseCode.invalidPayload, "text message is not valid UTF-8"), handler, 0)
                return false
            }
            let goOn = message.withUnsafeBytes { handler(.text($0)) }
            resetMessage()
            return goOn
        case .ping:
            let goOn = control.withUnsafeBytes { handler(.ping($0)) }
            control.removeAll(keepingCapacity: true)
            return goOn
        case .pong:
            control.removeAll(keepingCapacity: true)
            return handler(.pong)
        case .close:
            defer { control.removeAll() }
            if control.count == 1 {
                _ = fail((WebSocketCloseCode.protocolError, "close frame with a 1-byte payload"), handler, 0)
                return false
            }
            var code: UInt16?
            if control.count >= 2 {
                let value = UInt16(control[0]) << 8 | UInt16(control[1])
                let reasonValid = control.withUnsafeBytes { UTF8Validation.isValid(UnsafeRawBufferPointer(rebasing: $0.dropFirst(2))) }
                guard Self.isValidReceivedCloseCode(value), reasonValid else {
                    _ = fail((WebSocketCloseCode.protocolError, "invalid close code or reason"), handler, 0)
                    return false
                }
                code = value
            }
            isFinished = true
            _ = handler(.close(code: code))
            return false
        }
    }

    /// Codes a peer may send (§7.4.1-2): 1000-1003, 1007-1011, and 3000-4999 for applications.
    static func isValidReceivedCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011, 3000...4999: true
        default: false
        }
    }

    /// Reads a frame's header and opens the frame: in place when the whole header is in `input` (the usual
    /// case, and the cost that a message of many small frames pays per frame), and otherwise gathered into
    /// `header` over feeds.
    private mutating func readHeader(_ input: UnsafeRawBufferPointer,
                                     admit: (Int) -> Bool) -> (consumed: Int, failure: Event?) {
        if header.isEmpty && input.count >= 2 {
            if let failure = checkFirstBytes(input[0], input[1]) {
                return (2, .failure(code: failure.0, reason: failure.1))
            }
            let length = Self.headerLength(second: input[1])
            if input.count >= length {
                return (length, openFrame(UnsafeRawBufferPointer(rebasing: input[0..<length]), admit: admit))
            }
        }
        var consumed = 0
        while consumed < input.count {
            let needed = header.count < 2 ? 2 : Self.headerLength(second: header[1])
            if header.count >= needed { break }
            let take = min(needed - header.count, input.count - consumed)
            header.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[consumed..<consumed + take]))
            consumed += take
            if header.count == 2, let failure = checkFirstBytes(header[0], header[1]) {
                return (consumed, .failure(code: failure.0, reason: failure.1))
            }
        }
        guard header.count >= 2, header.count == Self.headerLength(second: header[1]) else { return (consumed, nil) }
        // Copied out (at most 14 bytes), so that opening the frame may change the decoder.
        var bytes: (UInt64, UInt64) = (0, 0)
        let count = header.count
        withUnsafeMutableBytes(of: &bytes) { raw in header.withUnsafeBytes { raw.copyMemory(from: $0) } }
        header.removeAll(keepingCapacity: true)
        return (consumed, withUnsafeBytes(of: &bytes) {
            openFrame(UnsafeRawBufferPointer(rebasing: $0[0..<count]), admit: admit)
        })
    }

    /// Checks a whole header (its first two bytes are checked already) and opens its frame, or says why not.
    private mutating func openFrame(_ header: UnsafeRawBufferPointer, admit: (Int) -> Bool) -> Event? {
        let lengthCode = Int(header[1] & 0x7F)
        var length = lengthCode
        if lengthCode == 126 {
            length = Int(header[2]) << 8 | Int(header[3])
        } else if lengthCode == 127 {
            var value: UInt64 = 0
            for index in 2..<10 { value = value << 8 | UInt64(header[index]) }
            guard value >> 63 == 0 else { return Self.protocolError("frame length has its top bit set") }
            if !isBinaryFrame(header[0]) {
                guard value <= UInt64(limit(for: header[0])) else { return .tooLong(limit: limit(for: header[0])) }
            }
            guard value <= UInt64(Int.max / 2) else { return Self.protocolError("frame length out of range") }
            length = Int(value)
        }
        let opcode = WebSocketOpcode(rawValue: header[0] & 0x0F)!
        if opcode.isControl && length > 125 {
            return Self.protocolError("control frame longer than 125 bytes")
        }
        if opcode == .text || opcode == .binary { messageIsBinary = opcode == .binary }
        if !opcode.isControl && (discardingMessage || message.count + length > limit(for: header[0])) {
            // A binary message over its limit is dropped as it streams in (BPUB's rule); a text one closes.
            guard isBinaryFrame(header[0]) else { return .tooLong(limit: limit(for: header[0])) }
            discardingMessage = true
            resetMessage()
        } else if !opcode.isControl && isBinaryFrame(header[0]) && !admitGrowth(to: message.count + length, admit) {
            discardingMessage = true
            refusedMessage = true
            refusalDue = true
            resetMessage()
        }
        let m = header.count - 4
        frame = Frame(opcode: opcode, fin: header[0] & 0x80 != 0, remaining: length,
                      mask: (header[m], header[m + 1], header[m + 2], header[m + 3]))
        return nil
    }

    // The checks below read the decoder only, but are `mutating`: an unoptimised build (the one the integration
    // tests run) then passes the decoder by reference, where a plain method copied it, with a retain and a
    // release of each of its buffers, for every frame.

    /// Whether a frame whose first byte is `first` carries a binary message (its first frame or a continuation).
    private mutating func isBinaryFrame(_ first: UInt8) -> Bool {
        let opcode = WebSocketOpcode(rawValue: first & 0x0F)
        return maxBinaryMessage > 0 && (opcode == .binary || (opcode == .continuation && messageIsBinary))
    }

    /// The message limit that applies to a frame whose first byte is `first`: a continuation continues the
    /// message's kind.
    private mutating func limit(for first: UInt8) -> Int {
        let opcode = WebSocketOpcode(rawValue: first & 0x0F)
        let binary = opcode == .binary || (opcode == .continuation && messageIsBinary)
        return binary ? maxBinaryMessage : maxMessage
    }

    /// Checks what the first two bytes say: reserved bits, opcode, masking, control-frame fragmentation.
    private mutating func checkFirstBytes(_ first: UInt8, _ second: UInt8) -> (UInt16, String)? {
        guard first & 0x70 == 0 else { return (WebSocketCloseCode.protocolError, "reserved bits set (no extension was agreed)") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            return (WebSocketCloseCode.protocolError, "unknown opcode \(first & 0x0F)")
        }
        guard second & 0x80 != 0 else { return (WebSocketCloseCode.protocolError, "client frames must be masked") }
        if opcode == .binary && maxBinaryMessage == 0 {
            return (WebSocketCloseCode.unsupportedData, "binary frames are not accepted; send text lines")
        }
        if opcode.isControl && first & 0x80 == 0 { return (WebSocketCloseCode.protocolError, "fragmented control frame") }
        if opcode == .continuation && !inFragmentedMessage {
            return (WebSocketCloseCode.protocolError, "continuation frame without a message to continue")
        }
        if (opcode == .text || opcode == .binary) && inFragmentedMessage {
            return (WebSocketCloseCode.protocolError, "new message before the fragmented one finished")
        }
        return nil
    }

    /// 2 bytes, 2 or 8 more for the length, 4 for the mask (client frames are always masked).
    private static func headerLength(second: UInt8) -> Int {
        switch second & 0x7F {
        case 126: 2 + 2 + 4
        case 127: 2 + 8 + 4
        default: 2 + 4
        }
    }

    /// Appends `source` unmasked to `target`. The append grows `target` geometrically, so a message's bytes
    /// move O(1) times each however many frames bring them: an exact-size reserve per frame moved the whole
    /// message at every continuation frame, quadratic in a message of 16-byte frames (issue 35).
    private static func unmask(_ source: UnsafeRawBufferPointer, _ frame: inout Frame, into target: inout [UInt8]) {
        let start = target.count
        target.append(contentsOf: source)
        let offset = frame.maskOffset
        target.withUnsafeMutableBytes { bytes in
            withUnsafeBytes(of: frame.mask) { mask in
                // The mask as a word, turned to start at `offset`: eight bytes per step.
                var word: UInt64 = 0
                withUnsafeMutableBytes(of: &word) { for index in 0..<8 { $0[index] = mask[(offset + index) & 3] } }
                var index = start
                while index + 8 <= bytes.count {
                    let value = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ word
                    bytes.storeBytes(of: value, toByteOffset: index, as: UInt64.self)
                    index += 8
                }
                while index < bytes.count {
                    bytes[index] ^= mask[(offset + index - start) & 3]
                    index += 1
                }
            }
        }
        frame.maskOffset = (offset + source.count) & 3
    }

    private static func reset(_ buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: buffer.capacity <= keptCapacity)
    }

    /// Empties the message buffer; what `admit` agreed to goes with a buffer given back.
    private mutating func resetMessage() {
        Self.reset(&message)
        admittedBytes = min(admittedBytes, message.capacity)
    }

    /// Makes room for a binary message of `needed` bytes, asking `admit` for what the buffer grows by, before
    /// any of the frame is read: what was admitted is what the buffer holds. It grows fourfold (at most to the
    /// binary limit), so the bytes of a message of small frames move O(1) times each, and the buffers left
    /// behind by growth, which the allocator keeps until a trim, are a third of the last at most (doubling
    /// left as much as the last: 96 half-sent 1 MiB messages in 64 KiB frames under max_memory 32 MiB grew
    /// RSS by 37 MiB, against 33 MiB fourfold).
    private mutating func admitGrowth(to needed: Int, _ admit: (Int) -> Bool) -> Bool {
        guard needed > admittedBytes else { return true }
        let grown = min(max(needed, 4 * admittedBytes), max(needed, maxBinaryMessage))
        guard admit(grown - admittedBytes) else { return false }
        message.reserveCapacity(grown)
        admittedBytes = grown
        return true
    }

    private static func protocolError(_ reason: String) -> Event {
        .failure(code: WebSocketCloseCode.protocolError, reason: reason)
    }

    private mutating func fail(_ failure: (UInt16, String), _ handler: (Event) -> Bool, _ consumed: Int) -> Int {
        fail(.failure(code: failure.0, reason: failure.1), handler, consumed)
    }

    /// Ends decoding with `ending`, a `.failure` or `.tooLong`, and lets go of what was buffered.
    private mutating func fail(_ ending: Event, _ handler: (Event) -> Bool, _ consumed: Int) -> Int {
        isFinished = true
        message.removeAll()
        admittedBytes = 0
        control.removeAll()
        header.removeAll()
        _ = handler(ending)
        return consumed
    }
}
