import FanoutEngine
import FanoutEventLoop
import FanoutProtocol

/// RESUME and LAST (protocol 1.1): subscribe to one concrete subject, then reply where the subject stands and
/// replay the retained messages the client is entitled to, right behind the reply and ahead of anything
/// published later.
extension Server {
    func resume(_ connection: ClientConnection, subject: String, kind: ReplayRequest.Kind) {
        guard mayResume(connection, subject: subject) else { return }
        if !connection.subscriptions.contains(subject) {
            addSubscriptions([subject], for: connection)
        } else if connection.extras?.groupOfPattern[subject] != nil {
            changeMode(of: subject, to: nil, for: connection)  // RESUME and LAST subscribe plainly
        }
        // The reply and the replay together stay within the connection's output limit: what does not fit is
        // left out (oldest first) and counted as missed, never turned into a slow-consumer drop.
        let replyRoom = 96 + subject.utf8.count
        let budget = max(0, configuration.limits.maxPendingBytes - connection.pendingBytes - replyRoom)
        let request = ReplayRequest(subject: subject, kind: kind, budget: budget)
        // From here until the replay is sent, live messages to this connection wait behind it.
        let job = ReplayJob(connection: connection)
        connection.madeExtras.replayJob = job
        var answered = false
        engine.replay(request) { [weak self] answer in
            answered = true
            guard let self else {
                answer.stream?.finish()
                return job.end()
            }
            self.reply(answer, for: job)
        }
        // An engine that answers later: nothing this connection sends next may overtake the reply.
        if !answered { job.holdsCommands = holdCommands(of: connection) }
    }

    /// Whether `connection` may subscribe to `subject` for a RESUME or LAST (a no-op when it already is):
    /// refused with `-ERR limit` at max_subscriptions or when the index would pass the memory bound.
    func mayResume(_ connection: ClientConnection, subject: String) -> Bool {
        guard !connection.subscriptions.contains(subject) else { return true }
        let limit = configuration.limits.maxSubscriptions
        guard connection.subscriptions.count < limit else {
            stats.limitRefusals += 1
            connection.send(ProtocolError(
                .limit, "max_subscriptions=\(limit) reached (holding \(connection.subscriptions.count))").line)
            return false
        }
        if indexWouldPassMemoryBound(adding: 1) {
            stats.limitRefusals += 1
            connection.send(ProtocolError(.limit, "the server is at max_memory=\(configuration.limits.maxMemory)").line)
            return false
        }
        return true
    }

    private func reply(_ answer: ReplayAnswer, for job: ReplayJob) {
        let connection = job.connection
        guard connection.socket != nil else {
            answer.stream?.finish()
            return job.end()
        }
        connection.send(resumeReply(answer, for: connection))
        guard let stream = answer.stream, answer.replayed > 0 else { return finishReplay(job) }
        startReplay(stream, of: answer.replayed, job: job)
    }

    /// RESUME's and LAST's reply: `+OK <subscriptions> epoch=<e> seq=<n> replayed=<r> missed=<m|unknown>`.
    func resumeReply(_ answer: ReplayAnswer, for connection: ClientConnection) -> String {
        var reply = "+OK \(connection.subscriptions.count) epoch=\(answer.epoch) seq=\(answer.lastSeq) "
        reply += "replayed=\(answer.replayed) missed=\(answer.missed.map(String.init) ?? "unknown")\n"
        return reply
    }

    /// Sends `stream`'s `count` messages a slice per loop pass, the connection's later commands held behind them.
    func startReplay(_ stream: ReplayStream, of count: Int, job: ReplayJob) {
        stats.delivered += UInt64(count)
        stats.replayed += UInt64(count)
        job.start(stream)
        if !job.holdsCommands { job.holdsCommands = holdCommands(of: job.connection) }
        sendReplays(adding: job)
    }

    /// Ends the job: what waited behind the replay goes out, then the connection's held commands go on.
    func finishReplay(_ job: ReplayJob) {
        let connection = job.connection
        // A run still open (messages from Redis stay in one until the pass ends) may hold lines queued for this
        // job: they go out now, and the run's next message finds the connection as a plain receiver.
        if fanout.run.waiting.contains(where: { $0 === job }) { closeRun() }
        job.end()
        if !job.waiting.isEmpty {
            connection.send(job.waiting)
            job.waiting = []
        }
        if job.holdsCommands { releaseCommands(of: connection) }
        if cluster != nil { clusterReplayFinished(connection) }
    }

    /// Queues a publish run's lines behind the replays of the connections that are being sent one. They count
    /// as the connection's pending output, for the same marks as any backlog: the memory bound's watch,
    /// backpressure on the publisher, and the slow-consumer limit. The replay's own unsent part does not count:
    /// it is not encoded yet, and goes out as fast as the loop's turns allow, however fast the client reads.
    func queueBehindReplays(_ bytes: [UInt8], jobs: [ReplayJob]) {
        let marks = BacklogMarks(configuration.limits)
        for job in jobs where job.connection.socket != nil && job.connection.extras?.replayJob === job {
            job.waiting.append(contentsOf: bytes)
            checkBacklog(of: job.connection, marks: marks)
        }
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
