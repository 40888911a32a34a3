import FanoutEventLoop

/// Replays go out a slice per loop pass, round robin between connections, so that a replay of hundreds of
/// thousands of messages never keeps the loop from everyone else for more than `Server.turn`, and only as fast
/// as each client reads (`ReplayJob`'s worst case).
extension Server {
    /// Unsent output above which a replay's next slice waits for the client to read: two slices.
    static let replayAheadBytes = 2 * PublishRun.flushBytes

    /// Starts sending `job`'s replay on the next loop pass.
    func sendReplays(adding job: ReplayJob) {
        work.replayJobs.append(job)
        scheduleReplays()
    }

    private func scheduleReplays() {
        schedule(\.work.replayTimer) { $0.continueReplays() }
    }

    /// Sends 64 KiB slices (the batching of live fan-out) of each replay in turn until `Server.turn` is spent.
    /// A job whose client has not read what it was sent waits for its socket to drain instead.
    private func continueReplays() {
        let started = ContinuousClock.now
        while let job = work.replayJobs.popFirst() {
            guard let socket = job.connection.socket, let stream = job.stream else {
                job.end()
                continue
            }
            // What waits for the disk (`history_fsync: always`) counts as queued: a replay is encoded no faster
            // than it leaves, so that its own bytes never push its client over max_pending_bytes.
            if socket.outputCount + (job.connection.extras?.heldOutput?.bytes ?? 0) >= Self.replayAheadBytes {
                job.awaitingDrain = true
                work.replaysAwaitingDrain += 1
                socket.reportsDirectDrains = true
                continue
            }
            work.replayScratch.removeAll(keepingCapacity: true)
            let more = stream.encode(into: &work.replayScratch, limit: PublishRun.flushBytes,
                                         maxLine: configuration.limits.maxLine)
            job.connection.send(work.replayScratch)
            let pending = job.connection.pendingBytes
            if pending > BacklogWatch.mark { watchBacklog(of: job.connection) }
            if more { work.replayJobs.append(job) } else { finishReplay(job) }
            if ContinuousClock.now - started > Server.turn { break }
        }
        if work.replayScratch.capacity > 4 * PublishRun.flushBytes { work.replayScratch = [] }
        if !work.replayJobs.isEmpty { scheduleReplays() }
    }
}
