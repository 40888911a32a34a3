import FanoutEngine
import FanoutProtocol

/// The one publish path: PUB, BPUB and HTTP's publish, on either engine. The engine numbers the message, and
/// the numbered message goes to the fan-out (`Fanout.deliver`): here, when the memory engine numbers it at
/// once; from the engine, when the Redis engine's comes back, its receipt taking a slot among the
/// connection's pending replies (`PendingReplies`) until it is answered.
extension Server {
    @inline(__always)
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                 from connection: ClientConnection, engine: any Engine) {
        fanout.publishing(for: connection)
        switch engine.publish(subject: subject, payload: payload, anyBytes: anyBytes,
                              receipt: reserveReply(for: connection)) {
        case .numbered(let seq, let run, let recorded):
            stats.published &+= 1
            let receivers = fanout.deliver(NumberedMessage(subject: subject, seq: seq, payload: payload, anyBytes: anyBytes,
                                                           run: run, recorded: recorded))
            fanout.reply(receivers: receivers)
        case .pending:
            publishPending(from: connection)
        case .refused(let reason):
            stats.unavailable += 1
            let refusal = Array(ProtocolError(.unavailable, reason).line.utf8)
            if let pending = connection.extras?.pendingReplies, !pending.slots.isEmpty, pending.slots.last! == nil {
                pending.slots[pending.slots.count - 1] = refusal
                sendReadyReplies(pending, of: connection)
            } else {
                fanout.close()
                connection.send(refusal)
            }
        }
    }

    /// A slot for the reply of a publish an engine answers later, and its ticket. The slot exists before the
    /// engine is asked, so that no answer finds it missing.
    func reserveReply(for connection: ClientConnection) -> (receipts: any PublishReceipts, ticket: UInt64) {
        let pending = replies(of: connection)
        let ticket = pending.nextTicket
        pending.slots.append(nil)
        return (pending, ticket)
    }

    /// The connection's pending replies, made on first use.
    func replies(of connection: ClientConnection) -> PendingReplies {
        if let known = connection.extras?.pendingReplies { return known }
        let made = PendingReplies(server: self, connection: connection)
        connection.madeExtras.pendingReplies = made
        return made
    }

    private func publishPending(from connection: ClientConnection) {
        guard let pending = connection.extras?.pendingReplies else { return }
        sendReadyReplies(pending, of: connection)
        // A client that pipelines faster than the engine answers is held back, as a TCP window would, instead
        // of meeting max_in_flight and its refusals alone. Read on once its replies are out.
        if pending.slots.count >= cluster?.pipelineLimit ?? 16 { connection.stopReading(.engineHold) }
    }

    /// The engine answered the publish under `ticket`: its reply takes its slot.
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>, pending: PendingReplies) {
        let reply: [UInt8]
        switch result {
        case .success(let receivers):
            stats.published += 1
            reply = pending.acknowledgement(receivers: receivers)
        case .failure(let failure):
            if failure.outcomeUnknown { stats.outcomeUnknown += 1 } else { stats.unavailable += 1 }
            reply = Array(ProtocolError(.unavailable, failure.description).line.utf8)
        }
        guard let connection = pending.connection, connection.socket != nil else { return }
        fillReply(reply, ticket: ticket, pending, of: connection)
    }


    func fillReply(_ reply: [UInt8], ticket: UInt64, _ pending: PendingReplies, of connection: ClientConnection) {
        guard ticket >= pending.firstTicket else { return }
        let position = Int(ticket - pending.firstTicket)
        guard position < pending.slots.count else { return }
        pending.slots[position] = reply
        sendReadyReplies(pending, of: connection)
    }

    /// Sends the replies at the front that are ready; once none wait, runs the command held behind them.
    func sendReadyReplies(_ pending: PendingReplies, of connection: ClientConnection) {
        while let first = pending.slots.first, let reply = first {
            connection.send(reply)
            pending.slots.removeFirst()
            pending.firstTicket += 1
        }
        resumeCommands(pending, of: connection)
    }

    /// Runs the deferred command once nothing is pending, then lets the connection read on.
    func resumeCommands(_ pending: PendingReplies, of connection: ClientConnection) {
        // A replay still going out in slices comes first (`finishReplay` calls again).
        guard !pending.isBusy, connection.extras?.replayJob == nil else { return }
        if let line = pending.deferred {
            pending.deferred = nil
            _ = line.withUnsafeBytes { execute($0, from: connection) }
            fanout.finish()
            if pending.isBusy { return }
        }
        connection.resumeReading(.engineHold)
        if pending.closeWhenAnswered && !pending.isBusy && connection.socket != nil {
            disconnect(connection, reason: .eof)
        }
    }

    /// A client that closed its side (`nc -N`, a script's last PUBs) still gets the replies of its PUBs that
    /// the engine has not answered yet: true when the connection stays until they are sent. Bounded: a shard
    /// that stops answering is dropped by its heartbeat, which fails what was in flight.
    func keepsForReplies(_ connection: ClientConnection) -> Bool {
        guard let pending = connection.extras?.pendingReplies, pending.isBusy else { return false }
        pending.closeWhenAnswered = true
        return true
    }

    /// Sends a reply that needs no execution (an error, a refusal) in its place: behind the replies still
    /// pending, or at once.
    func reply(_ line: String, to connection: ClientConnection) {
        if let pending = connection.extras?.pendingReplies, pending.isBusy {
            pending.slots.append(Array(line.utf8))
        } else {
            connection.send(line)
        }
    }
}
