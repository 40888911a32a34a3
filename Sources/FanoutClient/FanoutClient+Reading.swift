import FanoutEventLoop
import FanoutProtocol

/// Lines from the server: pushed messages (deduplicated and checked for gaps by `ResumeState`), replies,
/// and the lines that come unasked (greeting, server closing, revoked patterns, RESET, and since 1.2 the
/// `BMSG` pushes, questions put to this connection, and the answers and `DONE` of the questions it asked).
extension FanoutClient {
    public func socketDidRead(_ socket: BufferedSocket) {
        socket.readAvailable()
        socket.readInput { chunk in
            framer.feed(chunk) { event in
                var next = LineFramer.Next.goOn
                switch event {
                case .line(let line): next = handleLine(line)
                case .tooLong: connectionLost(reason: "server line longer than \(options.maxLine) bytes")
                case .payload(let payload): binaryMessageArrived(payload)
                case .badPayloadEnd: connectionLost(reason: "server payload not followed by its line end")
                }
                return self.socket === socket ? next : .stop
            }
        }
        afterReadBatch?()
    }

    /// Handles one line; returns `.readPayload` after a `BMSG` header.
    func handleLine(_ line: UnsafeRawBufferPointer) -> LineFramer.Next {
        if MessageLine.looksLikeMessage(line) {
            handleMessage(line)
            return .goOn
        }
        guard let parsed = ServerLine.parse(line) else {
            connectionLost(reason: ClientError.protocolViolation(String(decoding: line.prefix(80), as: UTF8.self)).description)
            return .goOn
        }
        switch parsed {
        case .hello(let name, let fields):
            // An epoch goes back on RESUME lines: one that is not a token would be a word the client cannot send.
            if let epoch = fields["epoch"], !Token.isValid(epoch) {
                let violation = ClientError.protocolViolation("greeting's epoch '\(epoch.prefix(80))'")
                connectionLost(reason: violation.description)
                return .goOn
            }
            greeted(serverName: name, epoch: fields["epoch"])
        case .failure(let error) where error.code == .kicked:
            // A push, never a reply (PROTOCOL.md, Presence): the farewell before the server closes.
            wasKicked(reason: error.text)
        case .failure(let error) where phase == .connecting && serverName != nil:
            completeHead(.failure(.server(error)))
        case .failure(let error) where phase == .connecting:
            // Refused at accept, e.g. -ERR limit (max_connections).
            connectionLost(reason: "\(error.code) \(error.text)")
        case .failure(let error) where [.slowConsumer, .shuttingDown, .idleTimeout].contains(error.code):
            onEvent?(.serverClosing(error))
        case .failure(let error) where error.code == authExpiredCode:
            // A push, never a reply (PROTOCOL.md, AUTH).
            onEvent?(.authExpired(error))
            if !error.text.hasPrefix("closing") { refreshToken() }
        case .failure(let error) where error.revokedPatterns != nil:
            recordSubscription(error.revokedPatterns ?? [], subscribing: false)
            onEvent?(.revoked(error))
        case .failure(let error):
            completeHead(.failure(.server(error)))
        case .reset(let subject, let epoch, _, _) where !Token.isValid(epoch):
            let violation = ClientError.protocolViolation("RESET \(subject) epoch=\(epoch.prefix(80))")
            connectionLost(reason: violation.description)
        case .reset(let subject, let epoch, let seq, let missed):
            resumeState.reset(subject: subject, epoch: epoch, seq: seq)
            onEvent?(.reset(subject: subject, epoch: epoch, seq: seq, missed: missed.map(MissedMessages.count) ?? .unknown))
        case .success(_, let text):
            completeHead(.success(text))
        case .binaryMessage(let subject, let seq, let length):
            return binaryMessageStarts(subject: subject, seq: seq, length: length)
        case .question(let subject, let id, let payload):
            onQuestion?(Question(subject: subject, id: id, payload: payload))
        case .answer(let id, let responder, let payload):
            answerArrived(id: id, responder: responder, payload: payload)
        case .done(let id, let asked, let answered, let gone):
            questionClosed(id: id, asked: asked, answered: answered, gone: gone)
        case .message:
            break
        }
        return .goOn
    }

    func handleMessage(_ line: UnsafeRawBufferPointer) {
        guard let parsed = MessageLine(line) else {
            connectionLost(reason: ClientError.protocolViolation(String(decoding: line.prefix(80), as: UTF8.self)).description)
            return
        }
        deliver(subject: String(decoding: parsed.subject, as: UTF8.self), seq: parsed.seq, payload: parsed.payload)
    }

    /// Hands a message (from `MSG` or `BMSG`) to the handlers, unless it is a duplicate.
    func deliver(subject: String, seq: UInt64, payload: UnsafeRawBufferPointer) {
        // A group member's share of a subject has gaps by design; only plainly covered subjects are tracked.
        if groups.isEmpty || coveredPlainly(subject) {
            switch resumeState.observe(subject: subject, seq: seq) {
            case .deliver: break
            case .duplicate: return
            case .gap(let expected, let received):
                onEvent?(.gap(subject: subject, expected: expected, received: received))
            case .restarted: onEvent?(.resumed(subject: subject, recovered: 0, missed: .unknown))
            }
        }
        let message = Message(subject: subject, seq: seq, payload: Array(payload))
        for entry in handlers where Subject.matches(pattern: entry.pattern, subject: message.subject) {
            entry.handler(message)
        }
        onMessage?(message)
    }
}
