import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutRedis
import FanoutRedisEngine

/// RESUME and LAST on a clustered node: the replay comes from the subject's stream in Redis, read in the
/// race-free order (`RedisEngine.replay`), and goes out a slice per loop pass like a standalone replay. The
/// connection joins the subject's local subscribers only when the answer is here, right before its reply: the
/// live messages that came while the stream was read follow the replay, so nothing is missed or sent twice.
/// Its later commands wait meanwhile.
extension Server {
    /// A replay sent in slices is over: the command the cluster held behind it runs now.
    func clusterReplayFinished(_ connection: ClientConnection) {
        guard let node = cluster, let pending = node.pending[connection.id] else { return }
        clusterResumeCommands(pending, of: connection)
    }

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
        if pending.replaying { holdForCluster(connection) }
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
        // Messages that arrived before the answer go out before the reply; later ones see the replay job.
        flushClusterRun()
        if !connection.subscriptions.contains(subject) {
            addSubscriptions([subject], for: connection)
        } else if connection.extras?.groupOfPattern[subject] != nil {
            changeMode(of: subject, to: nil, for: connection)  // RESUME and LAST subscribe plainly
        }
        let answer = replay.answer
        connection.send(resumeReply(answer, for: connection))
        // What came while the stream was read follows the replay, ahead of anything later.
        var following: [UInt8] = []
        var subjectBytes = subject
        subjectBytes.withUTF8 { subjectBuffer in
            for delivery in replay.following {
                delivery.payload.withUnsafeBytes { payload in
                    Encoder.appendPush(subject: UnsafeRawBufferPointer(subjectBuffer), seq: delivery.seq,
                                       payload: payload, maxLine: configuration.limits.maxLine, to: &following)
                }
            }
        }
        stats.delivered += UInt64(replay.following.count)
        guard answer.replayed > 0, let stream = answer.stream else {
            if !following.isEmpty { connection.send(following) }
            return
        }
        // As a standalone replay goes: live messages and the connection's commands wait behind it
        // (`finishReplay` then runs the command the cluster held, `clusterReplayFinished`).
        let job = ReplayJob(connection: connection)
        connection.madeExtras.replayJob = job
        job.waiting = following
        startReplay(stream, of: answer.replayed, job: job)
    }
}
