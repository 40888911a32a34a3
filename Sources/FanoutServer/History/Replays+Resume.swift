import FanoutEngine
import FanoutEventLoop
import FanoutProtocol

/// RESUME and LAST (protocol 1.1): subscribe to one concrete subject, then reply where the subject stands and
/// replay the retained messages the client is entitled to, right behind the reply and ahead of anything
/// published later.
extension Replays {
    func resume(_ connection: ClientConnection, subject: String, kind: ReplayRequest.Kind) {
        let host = host
        guard mayResume(connection, subject: subject) else { return }
        // The reply and the replay together stay within the connection's output limit: what does not fit is
        // left out (oldest first) and counted as missed, never turned into a slow-consumer drop.
        let replyRoom = 96 + subject.utf8.count
        let budget = max(0, host.configuration.limits.maxPendingBytes - connection.pendingBytes - replyRoom)
        var answered = false
        var held = false
        let request = ReplayRequest(subject: subject, kind: kind, budget: budget)
        host.engine.replay(request) { [weak self, weak connection] result in
            answered = true
            guard let self, let connection, connection.socket != nil else {
                if case .success(let replay) = result { replay.answer.stream?.finish() }
                return
            }
            self.answerReplay(result, subject: subject, kind: kind, to: connection)
            // Answered later: the connection was held, and goes on now.
            if held, let pending = connection.extras?.pendingReplies {
                pending.replaying = false
                self.host.replies.resumeCommands(pending, of: connection)
            }
        }
        // An engine that answers later: nothing this connection sends next may overtake the reply.
        if !answered {
            held = true
            host.replies.pending(of: connection).replaying = true
            connection.stopReading(.engineHold)
        }
    }

    /// Subscribes the connection to the subject when the answer is here, right before its reply: live messages
    /// that came while an engine shared by several nodes read its stream follow the replay (`following`), so
    /// nothing is missed or sent twice; from here until the replay is sent, live messages wait behind it.
    private func answerReplay(_ result: Result<EngineReplay, EngineFailure>, subject: String,
                              kind: ReplayRequest.Kind, to connection: ClientConnection) {
        let replay: EngineReplay
        switch result {
        case .success(let answered):
            replay = answered
        case .failure(let failure):
            connection.send(ProtocolError(.unavailable, failure.description).line)
            return
        }
        // Messages that arrived before the answer go out before the reply; later ones see the replay job.
        let host = host
        host.fanout.close()
        // Under `history_fsync: always`, the reply and the replay wait for what they name to be on disk.
        if host.isStandalone && host.localHistory.holdsAcknowledgements { host.durable.hold(connection) }
        if !connection.subscriptions.contains(subject) {
            host.subscriptions.add([subject], for: connection)
        } else if host.subscriptions.group(of: subject, for: connection) != nil {
            host.subscriptions.changeMode(of: subject, to: nil, for: connection)  // RESUME and LAST subscribe plainly
        }
        var answer = replay.answer
        var following: [UInt8] = []
        var subjectBytes = subject
        // LAST of a subject whose history has nothing to give (none kept here) gives its MQTT retained message,
        // the value an MQTT subscriber gets first: at the subject's last seq, which is its own when it was the
        // last message published there.
        if case .newest(let count) = kind, count > 0, answer.replayed == 0,
           let retained = host.mqttRetained.message(of: subject) {
            answer.replayed = 1
            subjectBytes.withUTF8 { subjectBuffer in
                retained.payload.withUnsafeBytes { payload in
                    Encoder.appendPush(subject: UnsafeRawBufferPointer(subjectBuffer), seq: answer.lastSeq,
                                       payload: payload, maxLine: host.configuration.limits.maxLine, to: &following)
                }
            }
            host.stats.delivered += 1
        }
        connection.send(resumeReply(answer, for: connection))
        subjectBytes.withUTF8 { subjectBuffer in
            for message in replay.following {
                message.payload.withUnsafeBytes { payload in
                    Encoder.appendPush(subject: UnsafeRawBufferPointer(subjectBuffer), seq: message.seq,
                                       payload: payload, maxLine: host.configuration.limits.maxLine, to: &following)
                }
            }
        }
        host.stats.delivered += UInt64(replay.following.count)
        guard answer.replayed > 0, let stream = answer.stream else {
            if !following.isEmpty { connection.send(following) }
            return
        }
        let job = ReplayJob(connection: connection)
        connection.madeExtras.replayJob = job
        job.waiting = following
        startReplay(stream, of: answer.replayed, job: job)
    }

    /// Whether `connection` may subscribe to `subject` for a RESUME or LAST (a no-op when it already is):
    /// refused with `-ERR limit` at max_subscriptions or when the index would pass the memory bound.
    func mayResume(_ connection: ClientConnection, subject: String) -> Bool {
        guard !connection.subscriptions.contains(subject) else { return true }
        let host = host
        let limit = host.configuration.limits.maxSubscriptions
        guard connection.subscriptions.count < limit else {
            host.stats.limitRefusals += 1
            connection.send(ProtocolError(
                .limit, "max_subscriptions=\(limit) reached (holding \(connection.subscriptions.count))").line)
            return false
        }
        if host.memory.indexWouldPassBound(adding: 1) {
            host.stats.limitRefusals += 1
            let bound = host.configuration.limits.maxMemory
            connection.send(ProtocolError(.limit, "the server is at max_memory=\(bound)").line)
            return false
        }
        return true
    }

    /// RESUME's and LAST's reply: `+OK <subscriptions> epoch=<e> seq=<n> replayed=<r> missed=<m|unknown>`.
    func resumeReply(_ answer: ReplayAnswer, for connection: ClientConnection) -> String {
        var reply = "+OK \(connection.subscriptions.count) epoch=\(answer.epoch) seq=\(answer.lastSeq) "
        reply += "replayed=\(answer.replayed) missed=\(answer.missed.map(String.init) ?? "unknown")\n"
        return reply
    }

    /// Sends `stream`'s `count` messages a slice per loop pass, the connection's later commands held behind them.
    func startReplay(_ stream: ReplayStream, of count: Int, job: ReplayJob) {
        host.stats.delivered += UInt64(count)
        host.stats.replayed += UInt64(count)
        job.start(stream)
        if !job.holdsCommands { job.holdsCommands = host.holdCommands(of: job.connection) }
        send(job)
    }

    /// Ends the job: what waited behind the replay goes out, then the connection's held commands go on.
    func finish(_ job: ReplayJob) {
        let connection = job.connection
        // A run still open (messages from Redis stay in one until the pass ends) may hold lines queued for this
        // job: they go out now, and the run's next message finds the connection as a plain receiver.
        if host.fanout.run.waiting.contains(where: { $0 === job }) { host.fanout.close() }
        job.end()
        if !job.waiting.isEmpty {
            connection.send(job.waiting)
            job.waiting = []
        }
        if job.holdsCommands { host.releaseCommands(of: connection) }
        // A command an engine held behind the replay runs now.
        if let pending = connection.extras?.pendingReplies { host.replies.resumeCommands(pending, of: connection) }
    }

    /// Sends a line the server pushes on its own (a reload's revocation): behind a replay under way, so that
    /// it never lands between the replay's messages.
    func sendNotice(_ line: String, to connection: ClientConnection) {
        if let job = connection.extras?.replayJob {
            job.waiting.append(contentsOf: line.utf8)
        } else {
            connection.send(line)
        }
    }
}
