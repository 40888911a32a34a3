import FanoutProtocol

/// A responder of a request/reply run: answers every question it is put with the question's own payload.
/// Fanout: `ASK <subject> <id> <payload>` → `ANSWER <id> <payload>` (its `+OK 1` or `+OK 0` is passed over).
/// NATS: `MSG <subject> <sid> <reply> <n>` and the payload → `PUB <reply> <n>` and the same payload.
final class Responder {
    private let connection: RawConnection
    private let format: WireFormat
    private static let answer = Array("ANSWER ".utf8)
    private static let pub = Array("PUB ".utf8)
    static let pong = Array("PONG\r\n".utf8)

    init(connection: RawConnection, format: WireFormat) {
        self.connection = connection
        self.format = format
        connection.consume = { [unowned self] bytes in
            self.format == .nats ? self.consumeNATS(bytes) : self.consumeFanout(bytes)
        }
        connection.start()
    }

    private func consumeFanout(_ bytes: UnsafeRawBufferPointer) -> Result<Int, BenchFailure> {
        FrameScan.lines(bytes) { position, end in
            switch bytes[position] {
            case UInt8(ascii: "A"):
                // ASK <subject> <id> <payload>
                guard let second = FrameScan.space(2, in: bytes, position..<end),
                      FrameScan.space(3, in: bytes, position..<end) != nil else {
                    return FrameScan.failure("unexpected push", bytes, position..<end)
                }
                connection.append(Self.answer)
                // The id, its space, the payload and the LF, as they lie.
                connection.append(UnsafeRawBufferPointer(rebasing: bytes[(second + 1)...end]))
                return .next
            case UInt8(ascii: "+"):
                return .next
            default:
                return FrameScan.failure("responder: unexpected line", bytes, position..<end)
            }
        }
    }

    private func consumeNATS(_ bytes: UnsafeRawBufferPointer) -> Result<Int, BenchFailure> {
        FrameScan.lines(bytes) { position, end in
            switch bytes[position] {
            case UInt8(ascii: "M"):
                // MSG <subject> <sid> <reply> <n>\r\n<payload>\r\n
                guard let third = FrameScan.space(3, in: bytes, position..<end),
                      FrameScan.space(4, in: bytes, position..<end) != nil,
                      let length = FrameScan.lastNumber(bytes, position..<end) else {
                    return FrameScan.failure("responder: no reply subject", bytes, position..<end)
                }
                let frameEnd = end + 1 + length + 2
                guard frameEnd <= bytes.count else { return .incomplete }
                connection.append(Self.pub)
                // `<reply> <n>\r\n`, the payload and its CRLF, as they lie.
                connection.append(UnsafeRawBufferPointer(rebasing: bytes[(third + 1)..<frameEnd]))
                return .resume(at: frameEnd)
            case UInt8(ascii: "P"):
                if bytes[position + 1] == UInt8(ascii: "I") { connection.append(Self.pong) }
                return .next
            case UInt8(ascii: "+"):
                return .next
            default:
                return FrameScan.failure("responder: unexpected line", bytes, position..<end)
            }
        }
    }
}

/// An asker of a request/reply run: keeps `window` questions open until it has put `quota`, and closes each at
/// its `DONE` (Fanout) or first reply (NATS), timing it from its send.
final class Asker {
    private let number: Int
    private let connection: RawConnection
    private let format: WireFormat
    private let window: Int
    private let tally: AskTally
    var quota = 0
    private var sent = 0
    private var open = 0
    private var payload: [UInt8]
    /// Fanout: `ASK bench.0 <timeout> <max> `. NATS: `PUB bench.0 _INBOX.bench.<asker>.`.
    private let prefix: [UInt8]
    private let suffix: [UInt8]
    /// Fanout: send times of the questions whose `+OK <id>` has not come yet, in order (`+OK` comes in command
    /// order), and then each open question's send time by its id's number.
    private var unconfirmed: [UInt64] = []
    private var unconfirmedStart = 0
    private var openByNumber: [UInt64: UInt64] = [:]
    /// NATS: each request's send time by its number, and whether it has had its first reply.
    private var sentAt: [UInt64] = []
    private var replied: [Bool] = []
    var afterRead: (() -> Void)?

    static func inboxPattern(_ asker: Int) -> String { "_INBOX.bench\(asker).*" }

    init(number: Int, connection: RawConnection, format: WireFormat, scenario: BenchScenario, settings: AskSettings,
         tally: AskTally) {
        self.number = number
        self.connection = connection
        self.format = format
        window = scenario.window
        self.tally = tally
        payload = BenchPayload.make(size: scenario.payloadSize)
        if format == .nats {
            prefix = Array("PUB \(AskRun.subject) _INBOX.bench\(number).".utf8)
            suffix = [0x0D, 0x0A]
        } else {
            prefix = Array("ASK \(AskRun.subject) \(settings.timeoutMilliseconds) \(settings.maxAnswers) ".utf8)
            suffix = [0x0A]
        }
        connection.consume = { [unowned self] bytes in
            let used = self.format == .nats ? self.consumeNATS(bytes) : self.consumeFanout(bytes)
            self.pump()
            return used
        }
        connection.afterRead = { [unowned self] in self.afterRead?() }
        connection.start()
    }

    /// Puts questions while the window has room, then sends them.
    func pump() {
        if format == .nats && sentAt.count < quota {
            sentAt = [UInt64](repeating: 0, count: quota)
            replied = [Bool](repeating: false, count: quota)
        }
        while open < window && sent < quota {
            let now = MonotonicClock.nanoseconds()
            BenchPayload.write(timestamp: now, into: &payload)
            connection.append(prefix)
            if format == .nats {
                sentAt[sent] = now
                connection.append(Array("\(sent) \(payload.count)\r\n".utf8))
            } else {
                unconfirmed.append(now)
            }
            payload.withUnsafeBytes { connection.append($0) }
            connection.append(suffix)
            sent += 1
            open += 1
        }
        connection.flush()
    }

    private func consumeFanout(_ bytes: UnsafeRawBufferPointer) -> Result<Int, BenchFailure> {
        let now = MonotonicClock.nanoseconds()
        return FrameScan.lines(bytes) { position, end in
            switch bytes[position] {
            case UInt8(ascii: "+"):
                // +OK <id> <asked>
                guard let second = FrameScan.space(2, in: bytes, position..<end),
                      let id = FrameScan.trailingNumber(bytes, (position + 4)..<second),
                      unconfirmedStart < unconfirmed.count else {
                    return FrameScan.failure("unexpected reply to ASK", bytes, position..<end)
                }
                openByNumber[id] = unconfirmed[unconfirmedStart]
                unconfirmedStart += 1
                if unconfirmedStart > 4096 {
                    unconfirmed.removeFirst(unconfirmedStart)
                    unconfirmedStart = 0
                }
                return .next
            case UInt8(ascii: "A"):
                tally.answers += 1
                return .next
            case UInt8(ascii: "D"):
                // DONE <id> asked=<a> answered=<b> gone=<g>
                guard let first = FrameScan.space(1, in: bytes, position..<end),
                      let second = FrameScan.space(2, in: bytes, position..<end),
                      let id = FrameScan.trailingNumber(bytes, (first + 1)..<second),
                      let sentAt = openByNumber.removeValue(forKey: id) else {
                    return FrameScan.failure("unexpected DONE", bytes, position..<end)
                }
                tally.close(sentAt: sentAt, now: now)
                open -= 1
                return .next
            default:
                return FrameScan.failure("asker: unexpected line", bytes, position..<end)
            }
        }
    }

    private func consumeNATS(_ bytes: UnsafeRawBufferPointer) -> Result<Int, BenchFailure> {
        let now = MonotonicClock.nanoseconds()
        return FrameScan.lines(bytes) { position, end in
            switch bytes[position] {
            case UInt8(ascii: "M"):
                // MSG _INBOX.bench<asker>.<n> <sid> <length>\r\n<payload>\r\n
                guard let first = FrameScan.space(1, in: bytes, position..<end),
                      let second = FrameScan.space(2, in: bytes, position..<end),
                      let request = FrameScan.trailingNumber(bytes, (first + 1)..<second), Int(request) < quota,
                      let length = FrameScan.lastNumber(bytes, position..<end) else {
                    return FrameScan.failure("unexpected reply", bytes, position..<end)
                }
                let frameEnd = end + 1 + length + 2
                guard frameEnd <= bytes.count else { return .incomplete }
                tally.answers += 1
                if !replied[Int(request)] {
                    replied[Int(request)] = true
                    tally.close(sentAt: sentAt[Int(request)], now: now)
                    open -= 1
                }
                return .resume(at: frameEnd)
            case UInt8(ascii: "P"):
                if bytes[position + 1] == UInt8(ascii: "I") { connection.append(Responder.pong) }
                return .next
            case UInt8(ascii: "+"):
                return .next
            default:
                return FrameScan.failure("asker: unexpected line", bytes, position..<end)
            }
        }
    }
}
