import FanoutEventLoop
import FanoutProtocol

/// Command dispatch: each line a connection reads comes here, in order, on the loop thread.
extension Server {
    /// Executes one line from `connection`: PUB joins or opens a publish run; anything else first closes the
    /// run, so that replies, subscriptions and listings see its effect. Returns what the framer reads next:
    /// `.goOn`, or a BPUB header's bytes to read or to drop.
    @discardableResult
    func execute(_ line: UnsafeRawBufferPointer, from connection: ClientConnection) -> LineFramer.Next {
        let command: Command
        do {
            guard let parsed = try CommandParser.parse(line) else { return .goOn }
            command = parsed
        } catch {
            closeRun()
            if let node = cluster, clusterQueues(error.line, for: connection, node: node) { return .goOn }
            connection.send(error.line)
            return .goOn
        }
        if case .pub(let subject, let payload) = command {
            // A clustered node: PUB goes to Redis, and anything else waits behind PUB replies still pending.
            if let node = cluster, clusterExecute(command, line: line, from: connection, node: node) { return .goOn }
            if let refusal = refusal(of: command, by: connection) {
                closeRun()
                connection.send(refusal.line)
                return .goOn
            }
            let receivers = publish(subject: subject, payload: payload, from: connection)
            fanout.run.appendReply(receivers: receivers)
            if fanout.run.replies.count >= PublishRun.flushReplyBytes { flushRunReplies() }
            return .goOn
        }
        // A BPUB header is answered (or refused) when its bytes are in: `acceptBinary`, `publishBinary`.
        if case .bpub(let subject, let length) = command { return acceptBinary(subject: subject, length: length, from: connection) }
        if let node = cluster, clusterExecute(command, line: line, from: connection, node: node) { return .goOn }
        if let refusal = refusal(of: command, by: connection) {
            closeRun()
            connection.send(refusal.line)
            return .goOn
        }
        closeRun()
        switch command {
        case .sub(let patterns):
            subscribe(connection, to: patterns)
        case .unsub(let patterns):
            unsubscribe(connection, from: patterns)
        case .ping(let text):
            connection.send(text.isEmpty ? "+PONG\n" : "+PONG \(String(decoding: text, as: UTF8.self))\n")
        case .quit:
            connection.send(Encoder.ok("bye"))
            disconnect(connection, reason: .quit)
        case .help:
            connection.send(Encoder.ok(Command.Verb.allCases.map(\.name).joined(separator: " ")))
        case .info:
            connection.send(Encoder.ok(infoFields()))
        case .channels(let filter):
            listChannels(for: connection, filter: filter)
        case .clients:
            connection.send(Encoder.ok(clientsListing()))
        case .auth(let token):
            authenticate(connection, token: token)
        case .resume(let subject, let position):
            resume(connection, subject: subject,
                   kind: position.map { .after(epoch: $0.epoch, seq: $0.afterSeq) } ?? .position)
        case .last(let subject, let count):
            resume(connection, subject: subject, kind: .newest(count: count))
        case .qsub(let group, let patterns):
            subscribe(connection, to: patterns, group: group)
        case .ask(let subject, let timeout, let maxAnswers, let payload):
            ask(subject: subject, timeoutMilliseconds: timeout, maxAnswers: maxAnswers, payload: payload, from: connection)
        case .answer(let id, let payload):
            answer(id: id, payload: payload, from: connection)
        case .pub, .bpub:
            break
        }
        return .goOn
    }

    /// A line over `max_line` ends any run (its place in the order is taken by the error) and is answered.
    func lineTooLong(from connection: ClientConnection) {
        closeRun()
        let error = ProtocolError(.tooLong, "line exceeds max_line=\(configuration.limits.maxLine) bytes").line
        if let node = cluster, clusterQueues(error, for: connection, node: node) { return }
        connection.send(error)
    }
}
