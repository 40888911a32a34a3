import FanoutEngine
import FanoutEventLoop
import FanoutProtocol

/// RESUME and LAST (protocol 1.1): subscribe to one concrete subject, then reply where the subject stands and
/// replay the retained messages the client is entitled to, right behind the reply and ahead of anything
/// published later.
extension Server {
    func resume(_ connection: ClientConnection, subject: String, kind: ReplayRequest.Kind) {
        if !connection.subscriptions.contains(subject) {
            let limit = configuration.limits.maxSubscriptions
            guard connection.subscriptions.count < limit else {
                stats.limitRefusals += 1
                connection.send(ProtocolError(
                    .limit, "max_subscriptions=\(limit) reached (holding \(connection.subscriptions.count))").line)
                return
            }
            if indexWouldPassMemoryBound(adding: 1) {
                stats.limitRefusals += 1
                connection.send(ProtocolError(.limit, "the server is at max_memory=\(configuration.limits.maxMemory)").line)
                return
            }
            addSubscriptions([subject], for: connection)
        }
        // The reply and the replay together stay within the connection's output limit: what does not fit is
        // left out (oldest first) and counted as missed, never turned into a slow-consumer drop.
        let replyRoom = 96 + subject.utf8.count
        let budget = max(0, configuration.limits.maxPendingBytes - connection.pendingBytes - replyRoom)
        let request = ReplayRequest(subject: subject, kind: kind, budget: budget)
        var answered = false
        engine.replay(request) { [weak self, weak connection] answer in
            answered = true
            guard let self, let connection, connection.socket != nil else { return }
            self.sendReplay(answer, to: connection)
        }
        // An engine that answers later: nothing this connection sends next may overtake the reply.
        if !answered { _ = holdCommands(of: connection) }
    }

    private func sendReplay(_ answer: ReplayAnswer, to connection: ClientConnection) {
        var reply = "+OK \(connection.subscriptions.count) epoch=\(answer.epoch) seq=\(answer.lastSeq) "
        reply += "replayed=\(answer.replayed) missed=\(answer.missed.map(String.init) ?? "unknown")\n"
        connection.send(reply)
        if answer.replayed > 0 {
            stats.delivered += UInt64(answer.replayed)
            stats.replayed += UInt64(answer.replayed)
            connection.send(answer.lines)
        }
        // Goes on with the connection's commands when an engine that answered later had them held.
        releaseCommands(of: connection)
    }
}
