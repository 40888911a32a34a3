import FanoutEventLoop
import FanoutProtocol

/// Lines from the server: pushed messages (deduplicated and checked for gaps by `ResumeState`), replies,
/// and the lines that come unasked (greeting, server closing, revoked patterns, RESET).
extension FanoutClient {
    public func socketDidRead(_ socket: BufferedSocket) {
        socket.readAvailable()
        socket.readInput { chunk in
            framer.feed(chunk) { event in
                switch event {
                case .line(let line): handleLine(line)
                case .tooLong: connectionLost(reason: "server line longer than \(options.maxLine) bytes")
                case .payload, .badPayloadEnd: break
                }
                return self.socket === socket ? .goOn : .stop
            }
        }
        afterReadBatch?()
    }

    func handleLine(_ line: UnsafeRawBufferPointer) {
        if MessageLine.looksLikeMessage(line) {
            handleMessage(line)
            return
        }
        guard let parsed = ServerLine.parse(line) else {
            connectionLost(reason: ClientError.protocolViolation(String(decoding: line.prefix(80), as: UTF8.self)).description)
            return
        }
        switch parsed {
        case .hello(let name, let fields):
            greeted(serverName: name, epoch: fields["epoch"])
        case .failure(let error) where phase == .connecting && serverName != nil:
            completeHead(.failure(.server(error)))
        case .failure(let error) where phase == .connecting:
            // Refused at accept, e.g. -ERR limit (max_connections).
            connectionLost(reason: "\(error.code) \(error.text)")
        case .failure(let error) where [.slowConsumer, .shuttingDown, .idleTimeout].contains(error.code):
            onEvent?(.serverClosing(error))
        case .failure(let error) where error.revokedPatterns != nil:
            recordSubscription(error.revokedPatterns ?? [], subscribing: false)
            onEvent?(.revoked(error))
        case .failure(let error):
            completeHead(.failure(.server(error)))
        case .reset(let subject, let epoch, let seq, let missed):
            resumeState.reset(subject: subject, epoch: epoch, seq: seq)
            onEvent?(.reset(subject: subject, epoch: epoch, seq: seq, missed: missed.map(MissedMessages.count) ?? .unknown))
        case .success(_, let text):
            completeHead(.success(text))
        case .message:
            break
        }
    }

    func handleMessage(_ line: UnsafeRawBufferPointer) {
        guard let parsed = MessageLine(line) else {
            connectionLost(reason: ClientError.protocolViolation(String(decoding: line.prefix(80), as: UTF8.self)).description)
            return
        }
        let seq = parsed.seq
        let subject = String(decoding: parsed.subject, as: UTF8.self)
        switch resumeState.observe(subject: subject, seq: seq) {
        case .deliver: break
        case .duplicate: return
        case .gap(let expected, let received): onEvent?(.gap(subject: subject, expected: expected, received: received))
        case .restarted: onEvent?(.resumed(subject: subject, recovered: 0, missed: .unknown))
        }
        let message = Message(subject: subject, seq: seq, payload: Array(parsed.payload))
        for entry in handlers where Subject.matches(pattern: entry.pattern, subject: message.subject) {
            entry.handler(message)
        }
        onMessage?(message)
    }
}
