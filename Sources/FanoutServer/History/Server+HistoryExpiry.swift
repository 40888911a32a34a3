import FanoutEventLoop

extension Server {
    /// Subjects whose retained messages are checked for age per tick: a few hundred microseconds' work.
    static let historyExpiryBudget = 1024
    static let historyExpiryInterval = Duration.milliseconds(250)

    /// Ages out retained messages in slices, so that subjects nobody publishes to let go of theirs too.
    func startHistoryExpiry() {
        guard historyTimer == nil, engine.keepsHistory else { return }
        let timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
            self.engine.expireHistory(budget: Self.historyExpiryBudget)
        }
        timer.schedule(after: Self.historyExpiryInterval)
        historyTimer = timer
    }
}
