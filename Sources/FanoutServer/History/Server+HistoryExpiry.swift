import FanoutEventLoop

extension Server {
    /// Subjects whose retained messages are checked for age per step: a few hundred microseconds' work.
    static let historyExpiryBudget = 1024
    static let historyExpiryInterval = Duration.milliseconds(250)

    /// Ages out retained messages in slices, so that subjects nobody publishes to let go of theirs too. A step
    /// removes a bounded number of messages; when expired or dropped ones are left, the next step runs on the
    /// next loop pass instead of a tick later, so that a burst expiring at once is freed within a second or so
    /// without stopping the loop.
    func startHistoryExpiry() {
        guard work.historyTimer == nil, local.keepsHistory else { return }
        let timer = LoopTimer(loop: loop) { [unowned self] in
            let workLeft = self.local.expireHistory(budget: Self.historyExpiryBudget)
            self.work.historyTimer?.schedule(after: workLeft ? .zero : Self.historyExpiryInterval)
        }
        timer.schedule(after: Self.historyExpiryInterval)
        work.historyTimer = timer
    }
}
