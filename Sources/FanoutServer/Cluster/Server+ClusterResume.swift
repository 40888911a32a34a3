import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutRedis
import FanoutRedisEngine

/// RESUME and LAST on a clustered node: the replay comes from the subject's stream in Redis, read in the
/// race-free order (`RedisEngine.replay`). The connection joins the subject's local subscribers only when
/// the answer is here, right before its reply: the live messages that came while the stream was read
/// follow the replay, so nothing is missed or sent twice. Its later commands wait meanwhile.
extension Server {
    func clusterResume(_ connection: ClientConnection, subject: String, kind: ReplayRequest.Kind, node: ClusterNode) {
        guard mayResume(connection, subject: subject) else { return }
        let pending = node.replies(of: connection, server: self)
        let replyRoom = 96 + subject.utf8.count
        let budget = max(0, configuration.limits.maxPendingBytes - connection.pendingBytes - replyRoom)
        var returned = false
        pending.replaying = true
        node.engine.replay(ReplayRequest(subject: subject, kind: kind, budget: budget)) { [unowned self, weak connection] result in
            pending.replaying = false
            guard let connection, connection.socket != nil else { return }
            self.sendClusterReplay(result, subject: subject, to: connection)
            // Answered later: the connection was held, and goes on now.
            if returned { self.clusterResumeCommands(pending, of: connection) }
        }
        returned = true
        if pending.replaying { holdForCluster(connection, pending) }
    }

    private func sendClusterReplay(_ result: Result<RedisEngine.ReplayResult, RedisFailure>, subject: String,
                                   to connection: ClientConnection) {
        let replay: RedisEngine.ReplayResult
        switch result {
        case .success(let answered):
            replay = answered
        case .failure(let failure):
            connection.send(ProtocolError(.unavailable, failure.description).line)
            return
        }
        if !connection.subscriptions.contains(subject) { addSubscriptions([subject], for: connection) }
        let answer = replay.answer
        var reply = "+OK \(connection.subscriptions.count) epoch=\(answer.epoch) seq=\(answer.lastSeq) "
        reply += "replayed=\(answer.replayed) missed=\(answer.missed.map(String.init) ?? "unknown")\n"
        connection.send(reply)
        if answer.replayed > 0, let stream = answer.stream {
            stats.delivered += UInt64(answer.replayed)
            stats.replayed += UInt64(answer.replayed)
            // In one piece: what Redis returned is at hand already, and the live messages held meanwhile follow.
            var lines: [UInt8] = []
            lines.reserveCapacity(answer.bytes)
            _ = stream.encode(into: &lines, limit: .max)
            stream.finish()
            connection.send(lines)
        }
        guard !replay.following.isEmpty else { return }
        var lines: [UInt8] = []
        var subjectBytes = subject
        subjectBytes.withUTF8 { subjectBuffer in
            for delivery in replay.following {
                delivery.payload.withUnsafeBytes { payload in
                    Encoder.appendMessage(subject: UnsafeRawBufferPointer(subjectBuffer), seq: delivery.seq,
                                          payload: payload, to: &lines)
                }
            }
        }
        stats.delivered += UInt64(replay.following.count)
        connection.send(lines)
    }
}
