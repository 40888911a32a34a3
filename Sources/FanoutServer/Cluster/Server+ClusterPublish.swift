import FanoutEventLoop
import FanoutProtocol
import FanoutRedis
import FanoutRedisEngine

/// PUB on a clustered node: the message goes to its subject's Redis shard, and `+OK <receivers>` (nodes
/// that had subscribers) is sent when the script has answered. Local subscribers get it, like everyone
/// else's, when it comes back from Redis (`deliverFromCluster`).
extension Server {
    func clusterPublish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                        from connection: ClientConnection, node: ClusterNode) {
        let pending = node.replies(of: connection, server: self)
        let ticket = pending.firstTicket + UInt64(pending.slots.count)
        // The slot exists before Redis can be asked, so that no answer finds it missing.
        pending.slots.append(nil)
        if let refusal = node.engine.publish(subject: subject, payload: payload, receipts: pending, ticket: ticket) {
            node.unavailable += 1
            pending.slots[pending.slots.count - 1] = Array(ProtocolError(.unavailable, refusal.description).line.utf8)
        }
        sendReadyReplies(pending, of: connection)
        // Read on once its replies are out (`clusterResumeCommands`).
        if pending.slots.count >= node.pipelineLimit { holdForCluster(connection) }
    }

    /// Redis answered the PUB under `ticket`: its reply takes its slot.
    func clusterPublished(ticket: UInt64, _ result: Result<Int64, RedisFailure>, pending: ClusterNode.PendingReplies) {
        guard let node = pending.node else { return }
        let reply: [UInt8]
        switch result {
        case .success(let receivers):
            stats.published += 1
            reply = node.acknowledgement(receivers: receivers)
        case .failure(let failure):
            if case .outcomeUnknown = failure { node.outcomeUnknown += 1 } else { node.unavailable += 1 }
            reply = Array(ProtocolError(.unavailable, failure.description).line.utf8)
        }
        guard let connection = pending.connection, connection.socket != nil, cluster === node else { return }
        fillReply(reply, ticket: ticket, pending, of: connection)
    }

    func fillReply(_ reply: [UInt8], ticket: UInt64, _ pending: ClusterNode.PendingReplies,
                           of connection: ClientConnection) {
        guard ticket >= pending.firstTicket else { return }
        let position = Int(ticket - pending.firstTicket)
        guard position < pending.slots.count else { return }
        pending.slots[position] = reply
        sendReadyReplies(pending, of: connection)
    }

    /// Sends the replies at the front that are ready; once none wait, runs the command held behind them.
    private func sendReadyReplies(_ pending: ClusterNode.PendingReplies, of connection: ClientConnection) {
        while let first = pending.slots.first, let reply = first {
            connection.send(reply)
            pending.slots.removeFirst()
            pending.firstTicket += 1
        }
        clusterResumeCommands(pending, of: connection)
    }

    /// Runs the deferred command once nothing is pending, then lets the connection read on.
    func clusterResumeCommands(_ pending: ClusterNode.PendingReplies, of connection: ClientConnection) {
        // A replay still going out in slices comes first (`clusterReplayFinished` calls again).
        guard !pending.isBusy, connection.extras?.replayJob == nil else { return }
        if let line = pending.deferred {
            pending.deferred = nil
            _ = line.withUnsafeBytes { execute($0, from: connection) }
            finishRuns()
            if pending.isBusy { return }
        }
        connection.resumeReading(.engineHold)
        if pending.closeWhenAnswered && !pending.isBusy && connection.socket != nil {
            disconnect(connection, reason: .eof)
        }
    }

    /// A client that closed its side (`nc -N`, a script's last PUBs) still gets the replies of its PUBs that
    /// Redis has not answered yet: true when the connection stays until they are sent. Bounded: a shard that
    /// stops answering is dropped by its heartbeat, which fails what was in flight.
    func clusterKeepsForReplies(_ connection: ClientConnection) -> Bool {
        guard let node = cluster, let pending = node.pending[connection.id], pending.isBusy else { return false }
        pending.closeWhenAnswered = true
        return true
    }

    /// A command that is not a PUB, read while this connection's PUB replies are pending: it is kept and run
    /// after them, and the connection reads nothing more meanwhile. True when it was deferred.
    /// A PUB (`unlessPublishing`) waits only behind a replay: PUBs pipeline behind each other's replies.
    func clusterDefers(_ line: UnsafeRawBufferPointer, of connection: ClientConnection, node: ClusterNode,
                       unlessPublishing: Bool = false) -> Bool {
        guard let pending = node.pending[connection.id],
              unlessPublishing ? pending.replaying : pending.isBusy else { return false }
        pending.deferred = Array(line)
        holdForCluster(connection)
        return true
    }

    /// Stops reading `connection` until `clusterResumeCommands` lets it go on (the gate's `engineHold`).
    func holdForCluster(_ connection: ClientConnection) {
        connection.stopReading(.engineHold)
    }
}

extension Server {
    /// Routes a parsed command on a clustered node; true when it was handled here. PUB goes to Redis (a PUB
    /// that is refused is answered by the usual path, in order); RESUME and LAST read the stream; anything
    /// else waits while PUB replies or a replay are pending.
    func clusterExecute(_ command: Command, line: UnsafeRawBufferPointer, from connection: ClientConnection,
                        node: ClusterNode) -> Bool {
        // What this command does or replies comes after the messages that arrived before it.
        flushClusterRun()
        switch command {
        case .pub(let subject, let payload):
            if clusterDefers(line, of: connection, node: node, unlessPublishing: true) { return true }
            guard refusal(of: command, by: connection) == nil else { return clusterDefers(line, of: connection, node: node) }
            clusterPublish(subject: subject, payload: payload, from: connection, node: node)
            return true
        case .ask(let subject, let timeout, let maxAnswers, let payload):
            // Like a PUB: its reply takes a slot among the PUB replies, filled when Redis has put it to the nodes.
            if clusterDefers(line, of: connection, node: node, unlessPublishing: true) { return true }
            guard refusal(of: command, by: connection) == nil else { return clusterDefers(line, of: connection, node: node) }
            clusterAsk(subject: subject, timeoutMilliseconds: timeout, maxAnswers: maxAnswers, payload: payload,
                       from: connection, node: node)
            return true
        case .resume(let subject, let position):
            if clusterDefers(line, of: connection, node: node) { return true }
            guard refusal(of: command, by: connection) == nil else { return false }
            clusterResume(connection, subject: subject,
                          kind: position.map { .after(epoch: $0.epoch, seq: $0.afterSeq) } ?? .position, node: node)
            return true
        case .last(let subject, let count):
            if clusterDefers(line, of: connection, node: node) { return true }
            guard refusal(of: command, by: connection) == nil else { return false }
            clusterResume(connection, subject: subject, kind: .newest(count: count), node: node)
            return true
        case .sub(let patterns):
            if clusterDefers(line, of: connection, node: node) { return true }
            return clusterAwaitsSubscriptions(patterns, line: line, of: connection, node: node)
        default:
            return clusterDefers(line, of: connection, node: node)
        }
    }

    /// A SUB replies once its subjects are subscribed in Redis (on the shards that are up): until then a
    /// message published on another node would not reach this one. The SUB waits, held, and runs after.
    private func clusterAwaitsSubscriptions(_ patterns: [String], line: UnsafeRawBufferPointer,
                                            of connection: ClientConnection, node: ClusterNode) -> Bool {
        let pending = node.replies(of: connection, server: self)
        if pending.subscribeNow {
            pending.subscribeNow = false
            return false
        }
        let fresh = patterns.filter { !connection.subscriptions.contains($0) && Subject.isValidPattern($0)
            && Subject.wildcardPatternProblem($0) == nil }
        guard !fresh.isEmpty, fresh.count <= configuration.limits.maxSubscriptions else { return false }
        let engine = node.engine
        // Held for the wait (the SUB's own subscriptions take over when it runs).
        for pattern in fresh { engine.retain(pattern: pattern) }
        var waited = false
        let ready = engine.whenInEffect(fresh) { [unowned self, weak connection] in
            pending.replaying = false
            pending.subscribeNow = true
            if let connection, connection.socket != nil, self.cluster === node {
                self.clusterResumeCommands(pending, of: connection)
            }
            pending.subscribeNow = false
            for pattern in fresh { engine.release(pattern: pattern) }
        }
        waited = !ready
        guard waited else {
            for pattern in fresh { engine.release(pattern: pattern) }
            return false
        }
        pending.replaying = true
        pending.deferred = Array(line)
        holdForCluster(connection)
        return true
    }

    /// An error line for a command that needs no execution, queued behind pending PUB replies; false when
    /// none are pending (send it at once).
    func clusterQueues(_ line: String, for connection: ClientConnection, node: ClusterNode) -> Bool {
        guard let pending = node.pending[connection.id], pending.isBusy else { return false }
        pending.slots.append(Array(line.utf8))
        return true
    }
}
