import FanoutEventLoop

/// Replays go out a slice per loop pass, round robin between connections, so that a replay of hundreds of
/// thousands of messages never keeps the loop from everyone else for more than `Server.turn`.
extension Server {
    /// Starts sending `job`'s replay on the next loop pass.
    func sendReplays(adding job: ReplayJob) {
        replayJobs.append(job)
        scheduleReplays()
    }

    private func scheduleReplays() {
        schedule(\.replayTimer) { $0.continueReplays() }
    }

    /// Sends 64 KiB slices (the batching of live fan-out) of each replay in turn until `Server.turn` is spent.
    private func continueReplays() {
        let started = ContinuousClock.now
        while let job = replayJobs.popFirst() {
            guard job.connection.socket != nil, let stream = job.stream else {
                job.end()
                continue
            }
            replayScratch.removeAll(keepingCapacity: true)
            let more = stream.encode(into: &replayScratch, limit: PublishRun.flushBytes)
            job.connection.send(replayScratch)
            if more { replayJobs.append(job) } else { finishReplay(job) }
            if ContinuousClock.now - started > Server.turn { break }
        }
        if replayScratch.capacity > 4 * PublishRun.flushBytes { replayScratch = [] }
        if !replayJobs.isEmpty { scheduleReplays() }
    }
}
