import FanoutEventLoop

/// Deadlines without a timer per command: one repeating timer looks a few times per timeout period at
/// whether the greeting came, and whether any reply came while commands wait.
extension FanoutClient {
    /// Checks connect and reply deadlines a few times per timeout period.
    func startWatchdog() {
        let timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.checkDeadlines() }
        timer.schedule(after: min(options.timeout / 4, .milliseconds(250)))
        watchdog = timer
    }

    func checkDeadlines() {
        let now = ContinuousClock.now
        if phase == .connecting && now - connectStartedAt > options.timeout {
            connectionLost(reason: "no greeting within \(options.timeout)")
        } else if phase == .ready && !pending.isEmpty {
            // No reply for `timeout` while commands wait: the mark moves whenever a reply arrives.
            guard let mark = replyProgressMark, mark.replies == repliesReceived else {
                replyProgressMark = (repliesReceived, now)
                return
            }
            if now - mark.at > options.timeout {
                let error = ClientError.timeout("waiting for a reply from \(address)")
                failPending(error)
                connectionLost(reason: "no reply within \(options.timeout)")
            }
        } else {
            replyProgressMark = nil
        }
        if !questions.isEmpty { failOverdueQuestions(now: now) }
    }
}
