@_spi(Bench) import FanoutEventLoop
import FanoutProtocol
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A publisher's connection once it is set up: each publish is three copies into one output buffer (the
/// subject's prebuilt prefix, the payload, the suffix), written with one `send` per batch, and
/// acknowledgements are counted where they lie in one input buffer. The load generator has one core, like
/// the server; a C load generator works this way, and anything slower measures the generator in the
/// publish-only scenario instead of the server.
final class PublishPump: TakenOverConnection {
    private let stream: RawStream
    private let format: WireFormat
    /// Every subject's frame prefix, back to back; `prefixes[i]` is subject i's range.
    private let prefixBytes: [UInt8]
    private let prefixes: [Range<Int>]
    private let suffix: [UInt8]
    private var output: UnsafeMutableRawBufferPointer
    /// Bytes queued and not yet taken by the kernel: `output[unsentStart..<unsentEnd]`.
    private var unsentStart = 0
    private var unsentEnd = 0
    /// Waiting for the kernel to take more: `flush` does nothing until it says so.
    private var waitingToWrite = false
    private let input: UnsafeMutableRawBufferPointer
    private var filled = 0
    private var failed = false
    /// Publishes sent and not yet acknowledged.
    private(set) var inFlight = 0
    /// After each read that brought acknowledgements: how many, and the receivers they reported in total.
    var onAcknowledged: ((_ count: Int, _ receivers: Int) -> Void)?
    var onFailure: ((String) -> Void)?
    var afterRead: (() -> Void)?
    /// MQTT at QoS 1 and 2: the packet identifier of the next PUBLISH, written into its prefix's last two bytes.
    private var nextPacketID: UInt16 = 1
    private let rewritesPacketID: Bool

    static let inputCapacity = 64 * 1024

    /// Takes over `fd`; `unread` is what the handshake read past its last reply.
    init(loop: EventLoop, fd: Int32, unread: [UInt8], format: WireFormat, subjects: [String], payloadSize: Int,
         window: Int, binary: Bool = false) {
        stream = RawStream(loop: loop, fd: fd)
        self.format = format
        if case .mqtt(let qos) = format { rewritesPacketID = qos != .atMostOnce } else { rewritesPacketID = false }
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        var suffix: [UInt8] = []
        for subject in subjects {
            let frame = format.publishFrame(subject: subject, payloadSize: payloadSize, binary: binary)
            ranges.append(bytes.count..<(bytes.count + frame.prefix.count))
            bytes += frame.prefix
            suffix = frame.suffix
        }
        prefixBytes = bytes
        prefixes = ranges
        self.suffix = suffix
        // A full window of the longest frames fits, so a window's worth never needs more room.
        let longest = (ranges.map(\.count).max() ?? 0) + payloadSize + suffix.count
        output = .allocate(byteCount: max(4096, longest * max(window, 1)), alignment: 16)
        (input, filled) = takenOverInput(unread, capacity: Self.inputCapacity)
        startReading(stream, for: self)
    }

    deinit {
        output.deallocate()
        input.deallocate()
    }

    /// Queues one publish of `payload` to subject number `subject`; `flush` sends what is queued.
    func publish(subject: Int, payload: UnsafeRawBufferPointer) {
        let prefix = prefixes[subject]
        let size = prefix.count + payload.count + suffix.count
        makeRoom(for: size)
        var cursor = output.baseAddress! + unsentEnd
        prefixBytes.withUnsafeBytes { cursor.copyMemory(from: $0.baseAddress! + prefix.lowerBound, byteCount: prefix.count) }
        cursor += prefix.count
        if rewritesPacketID {
            // A window of at most 65,535 publishes in flight never gives one identifier twice.
            cursor.storeBytes(of: nextPacketID.bigEndian, toByteOffset: -2, as: UInt16.self)
            nextPacketID = nextPacketID == UInt16.max ? 1 : nextPacketID + 1
        }
        cursor.copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        cursor += payload.count
        suffix.withUnsafeBytes { cursor.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        unsentEnd += size
        inFlight += 1
    }

    /// Hands the kernel what is queued; what it does not take waits for the socket to become writable.
    func flush() {
        guard !waitingToWrite, !failed, unsentEnd > unsentStart else { return }
        switch stream.send(UnsafeRawBufferPointer(rebasing: output[unsentStart..<unsentEnd])) {
        case .bytes(let count):
            unsentStart += count
            if unsentStart == unsentEnd {
                unsentStart = 0
                unsentEnd = 0
                return
            }
        case .wouldBlock:
            break
        case .failed(let errno):
            return fail("write failed: \(String(cString: strerror(errno)))")
        }
        waitingToWrite = true
        stream.waitUntilWritable()
    }

    private func makeRoom(for size: Int) {
        guard unsentEnd + size > output.count else { return }
        let unsent = unsentEnd - unsentStart
        if unsentStart > 0 {
            output.baseAddress!.copyMemory(from: output.baseAddress! + unsentStart, byteCount: unsent)
            unsentStart = 0
            unsentEnd = unsent
        }
        guard unsent + size > output.count else { return }
        // Paced or window-bound callers never get here; a caller that queues past the window still works.
        let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * (unsent + size), alignment: 16)
        larger.baseAddress!.copyMemory(from: output.baseAddress!, byteCount: unsent)
        output.deallocate()
        output = larger
    }

    func writable() {
        waitingToWrite = false
        flush()
    }

    func readable() {
        guard !failed else { return }
        let space = UnsafeMutableRawBufferPointer(rebasing: input[filled...])
        switch stream.receive(into: space) {
        case .bytes(let count):
            filled += count
            consume()
        case .wouldBlock:
            break
        case .end:
            return fail("connection closed by the server")
        case .failed(let errno):
            return fail("read failed: \(String(cString: strerror(errno)))")
        }
        afterRead?()
    }

    private func fail(_ reason: String) {
        guard !failed else { return }
        failed = true
        stream.stopReading()
        onFailure?(reason)
    }

    /// Counts the complete acknowledgements in the input and keeps an incomplete tail at its start.
    private func consume() {
        if case .mqtt = format { return consumeMQTT() }
        let base = UnsafeRawPointer(input.baseAddress!)
        var position = 0
        var count = 0
        var receivers = 0
        while position < filled, let newline = memchr(base + position, 0x0A, filled - position) {
            let end = base.distance(to: UnsafeRawPointer(newline))
            let line = UnsafeRawBufferPointer(start: base + position, count: end - position)
            // A NATS server's keep-alive (PING) or a PONG is no acknowledgement; a benchmark is over long before
            // an unanswered PING matters.
            if format == .nats && line.first == UInt8(ascii: "P") {
                position = end + 1
                continue
            }
            guard let value = acknowledgement(line) else {
                var text = Substring(String(decoding: line, as: UTF8.self))
                while text.first?.isWhitespace == true { text.removeFirst() }
                while text.last?.isWhitespace == true { text.removeLast() }
                return fail("unexpected reply to a publish: \(text)")
            }
            count += 1
            receivers += value
            position = end + 1
        }
        if position > 0 && position < filled {
            input.baseAddress!.copyMemory(from: input.baseAddress! + position, byteCount: filled - position)
        }
        filled -= position
        if filled == Self.inputCapacity { return fail("a reply longer than \(Self.inputCapacity) bytes") }
        if count > 0 {
            inFlight -= count
            onAcknowledged?(count, receivers)
        }
    }

    /// MQTT's acknowledgements: PINGRESP (QoS 0's stand-in), PUBACK, and QoS 2's PUBREC (answered with PUBREL
    /// at once) then PUBCOMP. None says how many received the message.
    private func consumeMQTT() {
        let bytes = UnsafeRawBufferPointer(rebasing: input[..<filled])
        var position = 0
        var count = 0
        var releases: [UInt8] = []
        while let (first, body) = MQTTFrames.packet(in: bytes, at: position) {
            switch first {
            case 0xD0, 0x40, 0x70:
                count += 1
            case 0x50:
                MQTTFrames.appendAcknowledgement(0x62, MQTTFrames.packetID(bytes, body), to: &releases)
            default:
                return fail("unexpected MQTT packet \(first >> 4) in reply to a publish")
            }
            position = body.upperBound
        }
        if position > 0 && position < filled {
            input.baseAddress!.copyMemory(from: input.baseAddress! + position, byteCount: filled - position)
        }
        filled -= position
        if !releases.isEmpty {
            makeRoom(for: releases.count)
            releases.withUnsafeBytes {
                (output.baseAddress! + unsentEnd).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
            unsentEnd += releases.count
            flush()
        }
        if count > 0 {
            inFlight -= count
            onAcknowledged?(count, 0)
        }
    }

    /// The receivers count in `+OK <n>` (Fanout) or `:<n>\r` (Redis), 0 for NATS's `+OK`; nil for any other line.
    private func acknowledgement(_ line: UnsafeRawBufferPointer) -> Int? {
        var digits = line[...]
        if digits.last == 0x0D { digits = digits.dropLast() }
        switch format {
        case .fanout, .webSocket, .eventStream:
            guard digits.starts(with: "+OK ".utf8) else { return nil }
            digits = digits.dropFirst(4)
        case .redis:
            guard digits.first == UInt8(ascii: ":") else { return nil }
            digits = digits.dropFirst()
        case .mqtt:
            return nil
        case .nats:
            // `+OK` says nothing of receivers.
            return digits.elementsEqual("+OK".utf8) ? 0 : nil
        }
        guard digits.count < 19, let value = DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: digits)) else {
            return nil
        }
        return Int(value)
    }
}
