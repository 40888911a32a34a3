import FanoutEngine
import FanoutProtocol

/// What keeping replies in order needs from the server: stats, the fan-out for pushes and its run, the cluster
/// node's pipeline limit, and the dispatcher to run the commands held behind the replies.
protocol ReplyOrderHost: AnyObject {
    var stats: ServerStats { get set }
    var fanout: Fanout<Server> { get }
    var cluster: ClusterNode? { get }
    @discardableResult
    func execute(_ line: UnsafeRawBufferPointer, from connection: ClientConnection) -> LineFramer.Next
    func readEnded()
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// Replies an engine that answers later (several nodes) still owes a connection, kept in command order
/// (`PendingReplies`, one per connection that published through such an engine): a publish's slot is filled
/// when its receipt comes, errors and refusals take a slot behind the pending ones, and a command that must not
/// overtake them runs once they are sent. On the memory engine every reply goes out at once and nothing here is
/// made.
final class ReplyOrder {
    unowned let host: any ReplyOrderHost

    init(host: any ReplyOrderHost) {
        self.host = host
    }

    /// A slot for the reply of a publish an engine answers later, and its ticket. The slot exists before the
    /// engine is asked, so that no answer finds it missing.
    func reserveReply(for connection: ClientConnection) -> (receipts: any PublishReceipts, ticket: UInt64) {
        let (pending, ticket) = reserveSlot(for: connection)
        return (pending, ticket)
    }

    /// A slot for any reply that comes later (a publish's, an ASK's, a WHO's across nodes), and its ticket:
    /// commands after it are answered after it (`fillReply`).
    @inline(__always)
    func reserveSlot(for connection: ClientConnection) -> (pending: PendingReplies, ticket: UInt64) {
        let pending = pending(of: connection)
        let ticket = pending.nextTicket
        pending.slots.append(nil)
        return (pending, ticket)
    }

    /// The connection's pending replies, made on first use.
    func pending(of connection: ClientConnection) -> PendingReplies {
        if let known = connection.extras?.pendingReplies { return known }
        let made = PendingReplies(order: self, connection: connection)
        connection.madeExtras.pendingReplies = made
        return made
    }

    /// The engine took the publish; its reply waits in the slot `reserveReply` made.
    func publishPending(from connection: ClientConnection) {
        guard let pending = connection.extras?.pendingReplies else { return }
        sendReadyReplies(pending, of: connection)
        // A client that pipelines faster than the engine answers is held back, as a TCP window would, instead
        // of meeting max_in_flight and its refusals alone. Read on once its replies are out.
        if pending.slots.count >= host.cluster?.pipelineLimit ?? 16 { connection.stopReading(.engineHold) }
    }

    /// The engine did not take the publish (its shard is down, or too much is in flight): `-ERR unavailable`,
    /// in the slot made for its reply.
    func publishRefused(_ reason: String, from connection: ClientConnection) {
        host.stats.unavailable += 1
        let refusal = Array(ProtocolError(.unavailable, reason).line.utf8)
        if let pending = connection.extras?.pendingReplies, let last = pending.slots.last, last == nil {
            pending.slots[pending.slots.count - 1] = refusal
            sendReadyReplies(pending, of: connection)
        } else {
            host.fanout.close()
            connection.send(refusal)
        }
    }

    /// The engine answered the publish under `ticket`: its reply takes its slot.
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>, pending: PendingReplies) {
        let reply: [UInt8]
        switch result {
        case .success(let receivers):
            host.stats.published += 1
            reply = pending.acknowledgement(receivers: receivers)
        case .failure(let failure):
            if failure.outcomeUnknown { host.stats.outcomeUnknown += 1 } else { host.stats.unavailable += 1 }
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

    /// Runs the deferred commands, in order, while nothing is pending, then lets the connection read on.
    func resumeCommands(_ pending: PendingReplies, of connection: ClientConnection) {
        // A replay still going out in slices comes first (`Replays.finish` calls again).
        guard !pending.isBusy, connection.extras?.replayJob == nil else { return }
        while let line = pending.deferred.popFirst() {
            _ = line.withUnsafeBytes { host.execute($0, from: connection) }
            host.readEnded()
            if pending.isBusy || connection.extras?.replayJob != nil || connection.socket == nil { return }
        }
        connection.resumeReading(.engineHold)
        if pending.closeWhenAnswered && !pending.isBusy && connection.socket != nil {
            host.disconnect(connection, reason: .eof)
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

    /// The engine that owed replies stopped, having answered what it owed: each connection's pending replies go,
    /// and a connection held back behind them reads on.
    func engineLeft(_ connections: ConnectionTable) {
        for connection in connections.values where connection.extras?.pendingReplies != nil {
            connection.extras?.pendingReplies = nil
            connection.resumeReading(.engineHold)
        }
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

    /// Delivers a push that must not overtake a reply still due from the engine (an ANSWER or DONE of a
    /// clustered question whose `+OK <id> <nodes>` waits for Redis): behind the pending replies, or at once.
    /// Held no longer than the replies ahead of it, which the shard's heartbeat bounds.
    func deliverBehindPendingReplies(_ bytes: [UInt8], to connection: ClientConnection) {
        if let pending = connection.extras?.pendingReplies, pending.isBusy {
            pending.slots.append(bytes)
        } else {
            host.fanout.deliver(bytes, to: connection)
        }
    }
}
