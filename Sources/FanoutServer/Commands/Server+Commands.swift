import FanoutEngine
import FanoutEventLoop
import FanoutProtocol

/// The one command dispatcher: each line a connection reads comes here, in order, on the loop thread, and
/// goes through the same steps on either engine: parse, wait behind replies an engine still owes, refuse, run.
extension Server {
    /// Executes one line from `connection`: PUB joins or opens a publish run; anything else first closes the
    /// run, so that replies, subscriptions and listings see its effect. Returns what the framer reads next:
    /// `.goOn`, or a BPUB header's bytes to read or to drop.
    @discardableResult
    func execute(_ line: UnsafeRawBufferPointer, from connection: ClientConnection) -> LineFramer.Next {
        execute(line, from: connection, engine: engine)
    }

    /// `execute(_:from:)` with the engine the caller took once for a whole read: loading the stored reference
    /// per line would cost a retain and a release.
    func execute(_ line: UnsafeRawBufferPointer, from connection: ClientConnection,
                 engine: any Engine) -> LineFramer.Next {
        let command: Command
        do {
            guard let parsed = try CommandParser.parse(line) else { return .goOn }
            command = parsed
        } catch {
            fanout.close()
            replies.reply(error.line, to: connection)
            return .goOn
        }
        if let pending = connection.extras?.pendingReplies,
           defers(command, line: line, behind: pending, of: connection) {
            return .goOn
        }
        // A BPUB header is answered (or refused) when its bytes are in: `acceptBinary`, `publishBinary`.
        if case .bpub(let subject, let length) = command {
            return acceptBinary(subject: subject, length: length, from: connection)
        }
        // Before the permission check: no grant lets a client publish a join or a leave.
        if Self.publishesPresence(command) {
            fanout.close()
            replies.reply(ProtocolError.presencePublish.line, to: connection)
            return .goOn
        }
        // Without users nothing is refused: a PUB then never reaches the authenticator (a call and a retain).
        if configuration.auth.requiresAuth, let refusal = auth.refusal(of: command, by: connection) {
            fanout.close()
            replies.reply(refusal.line, to: connection)
            return .goOn
        }
        if case .pub(let subject, let payload) = command {
            if configuration.userLimits.publishRate != nil, refusedOverUserRate(connection) { return .goOn }
            publish(subject: subject, payload: payload, anyBytes: false, from: connection, engine: engine)
            return .goOn
        }
        fanout.close()
        switch command {
        case .sub(let patterns):
            if !subscriptions.awaitsEngine(patterns, line: line, of: connection) {
                subscriptions.subscribe(connection, to: patterns)
            }
        case .unsub(let patterns):
            subscriptions.unsubscribe(connection, from: patterns)
        case .ping(let text):
            connection.send(text.isEmpty ? "+PONG\n" : "+PONG \(String(decoding: text, as: UTF8.self))\n")
        case .quit:
            connection.send(Encoder.ok("bye"))
            disconnect(connection, reason: .quit)
        case .help:
            connection.send(Encoder.ok(Command.Verb.allCases.map(\.name).joined(separator: " ")))
        case .info:
            connection.send(Encoder.ok(admin.info()))
        case .channels(let filter):
            admin.listChannels(for: connection, filter: filter)
        case .clients:
            connection.send(Encoder.ok(admin.clients()))
        case .auth(let token):
            auth.authenticate(connection, token: token)
        case .resume(let subject, let position):
            replays.resume(connection, subject: subject,
                   kind: position.map { .after(epoch: $0.epoch, seq: $0.afterSeq) } ?? .position)
        case .last(let subject, let count):
            replays.resume(connection, subject: subject, kind: .newest(count: count))
        case .qsub(let group, let patterns):
            subscriptions.subscribe(connection, to: patterns, group: group)
        case .ask(let subject, let timeout, let maxAnswers, let payload):
            questions.ask(subject: subject, timeoutMilliseconds: timeout, maxAnswers: maxAnswers, payload: payload,
                          from: connection)
        case .answer(let id, let payload):
            questions.answer(id: id, payload: payload, from: connection)
        case .who(let subject, let limit):
            presence.who(subject, limit: limit, for: connection)
        case .kick(let target, let reason):
            admin.kick(target, reason: reason, by: connection)
        case .pub, .bpub:
            break
        }
        return .goOn
    }

    /// The one publish path: PUB, BPUB and HTTP's publish, on either engine. The engine numbers the message,
    /// and the numbered message goes to the fan-out (`Fanout.deliver`): here, when the memory engine numbers
    /// it at once; from the engine, when the Redis engine's comes back, its receipt taking a slot among the
    /// connection's pending replies (`ReplyOrder.swift`) until it is answered.
    @inline(__always)
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                 from connection: ClientConnection, engine: any Engine) {
        fanout.publishing(for: connection)
        switch engine.publish(subject: subject, payload: payload, anyBytes: anyBytes,
                              receipt: replies.reserveReply(for: connection)) {
        case .numbered(let seq, let run, let recorded):
            stats.published &+= 1
            let receivers = fanout.deliver(NumberedMessage(subject: subject, seq: seq, payload: payload, anyBytes: anyBytes,
                                                           run: run, recorded: recorded))
            fanout.reply(receivers: receivers)
        case .pending:
            replies.publishPending(from: connection)
        case .refused(let reason):
            replies.publishRefused(reason, from: connection)
        }
    }

    /// Whether a command must wait behind the replies an engine still owes this connection (several nodes):
    /// then it is kept and run after them, and the connection reads nothing more meanwhile. A PUB or an ASK
    /// waits only behind a replay: they pipeline behind each other's replies, which keep their order.
    private func defers(_ command: Command, line: UnsafeRawBufferPointer, behind pending: PendingReplies,
                        of connection: ClientConnection) -> Bool {
        switch command {
        case .bpub: return false
        case .pub, .ask: guard pending.replaying else { return false }
        default: guard pending.isBusy else { return false }
        }
        pending.deferred.append(Array(line))
        connection.stopReading(.engineHold)
        return true
    }

    /// A read is over, the dispatcher's last boundary: the publish run goes out, and the engine records where
    /// its numbering stands.
    func readEnded() {
        fanout.finish()
        engine.endOfRead()
    }

    /// A line over `max_line` ends any run (its place in the order is taken by the error) and is answered.
    func lineTooLong(from connection: ClientConnection) {
        fanout.close()
        let limit = configuration.limits.maxLine
        replies.reply(ProtocolError(.tooLong, "line exceeds max_line=\(limit) bytes").line, to: connection)
    }

    // MARK: Held commands and fair turns

    // Commands that take several loop passes (a large SUB or UNSUB, a CHANNELS scan, a replay from an engine
    // that answers later) hold the connection's later commands back, so that replies keep their order, while
    // every other client is served in between. A connection's commands run for at most `turn` per loop pass
    // (the fan-out reads it again on the next: `Fanout+Turns.swift`). Both go through its read gate (`ReadGate`).

    /// Stops executing `connection`'s commands until `releaseCommands`. False when it cannot be held (closed,
    /// or already held).
    func holdCommands(of connection: ClientConnection) -> Bool {
        connection.stopReading(.commandsHeld)
    }

    /// Goes on with `connection`'s commands, those already read first.
    func releaseCommands(of connection: ClientConnection) {
        connection.resumeReading(.commandsHeld)
    }

    /// Work one connection's commands may do before the others get theirs. Not shorter: a publish run's first
    /// PUB gathers its receivers, and a turn that ends inside a publisher's window splits one run into two,
    /// doubling the sends to every subscriber. Scenario D (5,000 subscribers, 20,000 messages) made 2.0 million
    /// `sendto` calls with a 500 µs turn, 1.16 million with 2 ms and 1.02 million with 5 ms, against 1.01
    /// million with no turn at all; the CPU per delivery followed (1.7x, 1.2x, 1.0x).
    static let turn = Duration.milliseconds(5)
}
