@_spi(Bench) import FanoutEventLoop
import FanoutProtocol
import Histogram
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// What the receivers of one benchmark run saw, summed over all of them.
final class DeliveryTally {
    var delivered = 0
    var latency = BenchResult.latencyHistogram()
    var firstDeliveryAt: UInt64 = 0
    var lastDeliveryAt: UInt64 = 0
    /// The longest time between two reads that brought deliveries, once delivery started (any receiver).
    var longestGap: UInt64 = 0
    /// Time one message in `sampleEvery` (per receiver); 1 times them all.
    let sampleEvery: Int

    init(sampleEvery: Int) {
        self.sampleEvery = sampleEvery
    }

    func arrived(_ count: Int, at now: UInt64) {
        if lastDeliveryAt == 0 {
            firstDeliveryAt = now
        } else if now > lastDeliveryAt {
            longestGap = max(longestGap, now - lastDeliveryAt)
        }
        lastDeliveryAt = now
        delivered += count
    }

    func sample(payload: UnsafeRawBufferPointer, at now: UInt64) {
        if let sentAt = BenchPayload.timestamp(in: payload), now >= sentAt {
            _ = latency.record(now - sentAt)
        }
    }
}

/// A subscriber's connection once its subscription is confirmed: read in large `recv`s straight into one
/// buffer, deliveries counted where they lie, one message in `sampleEvery` timed. The load generator has
/// one core, like the server; this keeps its cost per delivery to a few nanoseconds, so that it measures
/// the server and not itself.
final class DeliverySink {
    private let stream: RawStream
    private let format: WireFormat
    private let tally: DeliveryTally
    private let buffer: UnsafeMutableRawBufferPointer
    private var filled = 0
    private var untilSample: Int
    /// MQTT acknowledgements of deliveries not yet taken by the kernel.
    private var acknowledgements: [UInt8] = []
    var onFailure: ((String) -> Void)?
    var afterRead: (() -> Void)?

    static let capacity = 256 * 1024

    init(loop: EventLoop, fd: Int32, unread: [UInt8], format: WireFormat, tally: DeliveryTally) {
        stream = RawStream(loop: loop, fd: fd)
        self.format = format
        self.tally = tally
        untilSample = tally.sampleEvery
        // Anything the handshake read past the subscription's reply is the first delivery bytes.
        (buffer, filled) = takenOverInput(unread, capacity: Self.capacity)
        stream.onReadable = { [unowned self] in self.readable() }
        stream.startReading()
    }

    deinit {
        buffer.deallocate()
    }

    private func readable() {
        // Drain what the kernel has, up to a few buffers, then let the other receivers have a turn.
        for _ in 0..<4 {
            let space = UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])
            switch stream.receive(into: space) {
            case .bytes(let count):
                filled += count
                consume(at: MonotonicClock.nanoseconds())
                if count < space.count {
                    afterRead?()
                    return
                }
            case .wouldBlock:
                afterRead?()
                return
            case .end:
                stream.stopReading()
                return fail("connection closed by the server")
            case .failed(let errno):
                stream.stopReading()
                return fail("read failed: \(String(cString: strerror(errno)))")
            }
        }
        afterRead?()
    }

    private func fail(_ reason: String) {
        // The server's last line, when it said why (a slow-consumer notice, say), is the better reason.
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<filled]), as: UTF8.self)
        let notice = text.split(separator: "\n").last { $0.hasPrefix("-ERR") }
        onFailure?(notice.map(String.init) ?? reason)
    }

    /// Counts the complete deliveries in the buffer and keeps the incomplete tail at its start.
    private func consume(at now: UInt64) {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<filled])
        let (count, used, problem) = switch format {
        case .fanout: countFanout(bytes, now)
        case .redis: countRedis(bytes, now)
        case .webSocket: countWebSocket(bytes, now)
        case .eventStream: countEvents(bytes, now)
        case .nats: countNATS(bytes, now)
        case .mqtt: countMQTT(bytes, now)
        }
        if count > 0 { tally.arrived(count, at: now) }
        if let problem {
            stream.stopReading()
            return fail(problem)
        }
        if used > 0 && used < filled {
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + used, byteCount: filled - used)
        }
        filled -= used
        if filled == Self.capacity { fail("a delivery longer than \(Self.capacity) bytes") }
    }

    /// Whether this delivery is the one in `sampleEvery` that is timed.
    @inline(__always)
    private func takesSample() -> Bool {
        untilSample -= 1
        guard untilSample == 0 else { return false }
        untilSample = tally.sampleEvery
        return true
    }

    /// Its own walk of the lines, not `FrameScan.lines`: this is the load generator's hot path over TCP (each
    /// delivery of every run), where the shared walk cost this function an eighth more instructions (valgrind,
    /// scenario A: 67 million for 2 million deliveries, against 59).
    private func countFanout(_ bytes: UnsafeRawBufferPointer, _ now: UInt64) -> (Int, Int, String?) {
        let base = bytes.baseAddress!
        var position = 0
        var count = 0
        while position < bytes.count, let newline = memchr(base + position, 0x0A, bytes.count - position) {
            let end = base.distance(to: UnsafeRawPointer(newline))
            let first = base.load(fromByteOffset: position, as: UInt8.self)
            if first == UInt8(ascii: "B") {
                // `BMSG <subject> <seq> <length>`, LF, the bytes, LF (protocol 1.2).
                guard let length = Self.lastNumber(UnsafeRawBufferPointer(rebasing: bytes[position..<end])) else {
                    let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position..<end]), as: UTF8.self)
                    return (count, end + 1, "unexpected line: \(line)")
                }
                guard end + 1 + length + 1 <= bytes.count else { break }
                count += 1
                if takesSample() {
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[(end + 1)..<(end + 1 + length)])
                    tally.sample(payload: payload, at: now)
                }
                position = end + 1 + length + 1
                continue
            }
            guard first == UInt8(ascii: "M") else {
                let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position..<end]), as: UTF8.self)
                return (count, end + 1, "unexpected line: \(line)")
            }
            count += 1
            if takesSample() {
                if let message = MessageLine(UnsafeRawBufferPointer(rebasing: bytes[position..<end])) {
                    tally.sample(payload: message.payload, at: now)
                }
            }
            position = end + 1
        }
        return (count, position, nil)
    }

    /// A walk of the lines as `consume` takes it: the deliveries counted, the bytes used, and why to give up (the
    /// bytes used then matter no more).
    @inline(__always)
    private static func counted(_ count: Int, _ walked: Result<Int, BenchFailure>) -> (Int, Int, String?) {
        switch walked {
        case .success(let used): (count, used, nil)
        case .failure(let failure): (count, 0, failure.description)
        }
    }

    /// NATS: `MSG <subject> <sid> [<reply>] <length>`, CRLF, the payload, CRLF. A server `PING` is answered, so
    /// that a long run keeps its subscribers; `+OK` and `PONG` are passed over.
    private func countNATS(_ bytes: UnsafeRawBufferPointer, _ now: UInt64) -> (Int, Int, String?) {
        var count = 0
        let walked = FrameScan.lines(bytes) { position, end in
            let line = UnsafeRawBufferPointer(rebasing: bytes[position..<end])
            switch line.first {
            case UInt8(ascii: "M"):
                guard let length = Self.lastNumber(line) else {
                    return FrameScan.failure("unexpected line", bytes, position..<end)
                }
                guard end + 1 + length + 2 <= bytes.count else { return .incomplete }
                count += 1
                if takesSample() {
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[(end + 1)..<(end + 1 + length)])
                    tally.sample(payload: payload, at: now)
                }
                return .resume(at: end + 1 + length + 2)
            case UInt8(ascii: "P"):
                if line.starts(with: "PING".utf8) { Responder.pong.withUnsafeBytes { _ = stream.send($0) } }
                return .next
            case UInt8(ascii: "+"):
                return .next
            default:
                return FrameScan.failure("unexpected line", bytes, position..<end)
            }
        }
        return Self.counted(count, walked)
    }

    /// MQTT: PUBLISH packets, each acknowledged as its QoS asks (PUBACK; PUBREC, then PUBCOMP for the server's
    /// PUBREL), the acknowledgements written after the walk in one send; what the kernel does not take waits
    /// for the next read.
    private func countMQTT(_ bytes: UnsafeRawBufferPointer, _ now: UInt64) -> (Int, Int, String?) {
        var count = 0
        var position = 0
        while let (first, body) = MQTTFrames.packet(in: bytes, at: position) {
            position = body.upperBound
            switch first >> 4 {
            case 3:
                let qos = (first >> 1) & 3
                let topicLength = Int(bytes[body.lowerBound]) << 8 | Int(bytes[body.lowerBound + 1])
                let idStart = body.lowerBound + 2 + topicLength
                let payloadStart = idStart + (qos > 0 ? 2 : 0)
                guard payloadStart <= body.upperBound else { return (count, position, "a malformed PUBLISH") }
                count += 1
                if qos > 0 {
                    let id = MQTTFrames.packetID(bytes, idStart..<body.upperBound)
                    MQTTFrames.appendAcknowledgement(qos == 1 ? 0x40 : 0x50, id, to: &acknowledgements)
                }
                if takesSample() {
                    tally.sample(payload: UnsafeRawBufferPointer(rebasing: bytes[payloadStart..<body.upperBound]), at: now)
                }
            case 6:
                MQTTFrames.appendAcknowledgement(0x70, MQTTFrames.packetID(bytes, body), to: &acknowledgements)
            case 9, 13:
                continue
            default:
                return (count, position, "unexpected MQTT packet type \(first >> 4)")
            }
        }
        sendAcknowledgements()
        return (count, position, nil)
    }

    private func sendAcknowledgements() {
        guard !acknowledgements.isEmpty else { return }
        let sent = acknowledgements.withUnsafeBytes { stream.send($0) }
        if case .bytes(let count) = sent { acknowledgements.removeFirst(count) }
    }

    /// The decimal number that ends a header line (a trailing CR allowed): a `BMSG` or NATS `MSG` length.
    static func lastNumber(_ line: UnsafeRawBufferPointer) -> Int? {
        var end = line.count
        if end > 0 && line[end - 1] == 0x0D { end -= 1 }
        var start = end
        while start > 0 && line[start - 1] != UInt8(ascii: " ") { start -= 1 }
        guard start < end, end - start < 19,
              let value = DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: line[start..<end])) else { return nil }
        return Int(value)
    }

    /// Server frames: `0x81`, a 7-bit, 16-bit or 64-bit length, then the `MSG` line without its LF.
    private func countWebSocket(_ bytes: UnsafeRawBufferPointer, _ now: UInt64) -> (Int, Int, String?) {
        var position = 0
        var count = 0
        while bytes.count - position >= 2 {
            guard bytes[position] == 0x81 else {
                return (count, position, "unexpected frame: opcode byte \(bytes[position])")
            }
            guard let (start, length) = ServerFrame.header(bytes, at: position), bytes.count >= start + length else { break }
            guard length > 0, bytes[start] == UInt8(ascii: "M") else {
                let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<start + length]), as: UTF8.self)
                return (count, start + length, "unexpected line: \(line)")
            }
            count += 1
            if takesSample() {
                if let message = MessageLine(UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])) {
                    tally.sample(payload: message.payload, at: now)
                }
            }
            position = start + length
        }
        return (count, position, nil)
    }

    /// Events: lines up to a blank one; each `data:` line is a delivery, its payload the JSON string after
    /// `"payload":"` (a benchmark payload needs no escaping). `id:` lines and comments are passed over.
    private func countEvents(_ bytes: UnsafeRawBufferPointer, _ now: UInt64) -> (Int, Int, String?) {
        var count = 0
        let walked = FrameScan.lines(bytes) { position, end in
            let line = UnsafeRawBufferPointer(rebasing: bytes[position..<end])
            if line.starts(with: Self.dataPrefix) {
                count += 1
                if takesSample() {
                    if let payload = Self.jsonPayload(in: line) { tally.sample(payload: payload, at: now) }
                }
            } else if line.starts(with: Self.errorEvent) {
                return .failed(BenchFailure(description: "unexpected event: error"))
            }
            return .next
        }
        return Self.counted(count, walked)
    }

    private static let dataPrefix = Array("data: ".utf8)
    private static let errorEvent = Array("event: error".utf8)
    private static let payloadKey = Array("\"payload\":\"".utf8)

    /// The bytes of the `"payload":"..."` string in an event's data line.
    private static func jsonPayload(in line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard line.count > payloadKey.count else { return nil }
        for start in 0...(line.count - payloadKey.count) where line[start] == UInt8(ascii: "\"")
            && UnsafeRawBufferPointer(rebasing: line[start..<start + payloadKey.count]).elementsEqual(payloadKey) {
            let from = start + payloadKey.count
            guard let close = line[from...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return UnsafeRawBufferPointer(rebasing: line[from..<close])
        }
        return nil
    }

    private func countRedis(_ bytes: UnsafeRawBufferPointer, _ now: UInt64) -> (Int, Int, String?) {
        var position = 0
        var count = 0
        while position < bytes.count {
            guard bytes[position] == UInt8(ascii: "*") else {
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position...]).prefix(200), as: UTF8.self)
                return (count, position, "unexpected reply: \(text)")
            }
            // *3\r\n $7\r\nmessage\r\n $<n>\r\n<channel>\r\n $<n>\r\n<payload>\r\n
            var cursor = position + 4
            guard let _ = Self.bulk(bytes, &cursor), let _ = Self.bulk(bytes, &cursor),
                  let payload = Self.bulk(bytes, &cursor) else { break }
            count += 1
            if takesSample() {
                tally.sample(payload: UnsafeRawBufferPointer(rebasing: bytes[payload]), at: now)
            }
            position = cursor
        }
        return (count, position, nil)
    }

    /// The bulk string `$<n>\r\n<n bytes>\r\n` at `cursor`, advancing past it; nil when incomplete.
    private static func bulk(_ bytes: UnsafeRawBufferPointer, _ cursor: inout Int) -> Range<Int>? {
        guard case let (value, index)? = DecimalDigits.scan(bytes, from: cursor + 1), index < bytes.count else {
            return nil
        }
        let length = Int(value)
        let start = index + 2
        guard start + length + 2 <= bytes.count else { return nil }
        cursor = start + length + 2
        return start..<(start + length)
    }
}
