import FanoutEventLoop

/// Replays go out a slice per loop pass, round robin between connections, so that a replay of hundreds of
/// thousands of messages never keeps the loop from everyone else for more than `Server.turn`.
extension Server {
    /// Starts sending `job`'s replay on the next loop pass.
    func sendReplays(adding job: ReplayJob) {
        work.replayJobs.append(job)
        scheduleReplays()
    }

    private func scheduleReplays() {
        schedule(\.work.replayTimer) { $0.continueReplays() }
    }

    /// Sends 64 KiB slices (the batching of live fan-out) of each replay in turn until `Server.turn` is spent.
    private func continueReplays() {
        let started = ContinuousClock.now
        while let job = work.replayJobs.popFirst() {
            guard job.connection.socket != nil, let stream = job.stream else {
                job.end()
                continue
            }
            work.replayScratch.removeAll(keepingCapacity: true)
            let more = stream.encode(into: &work.replayScratch, limit: PublishRun.flushBytes)
            job.connection.send(work.replayScratch)
            if more { work.replayJobs.append(job) } else { finishReplay(job) }
            if ContinuousClock.now - started > Server.turn { break }
        }
        if work.replayScratch.capacity > 4 * PublishRun.flushBytes { work.replayScratch = [] }
        if !work.replayJobs.isEmpty { scheduleReplays() }
    }
}
