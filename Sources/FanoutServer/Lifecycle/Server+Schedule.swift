import FanoutEventLoop

extension Server {
    /// Runs `action` after `delay` (by default on the next loop pass) through the timer kept at `slot`, made on
    /// first use; a no-op while that timer is already scheduled. Work done in slices (large SUBs, CHANNELS
    /// scans, replays, the index's sweep, fair turns) goes on this way.
    func schedule(_ slot: ReferenceWritableKeyPath<Server, LoopTimer?>, after delay: Duration = .zero,
                  _ action: @escaping (Server) -> Void) {
        if self[keyPath: slot] == nil {
            self[keyPath: slot] = LoopTimer(loop: loop) { [unowned self] in action(self) }
        }
        if self[keyPath: slot]?.isScheduled == false { self[keyPath: slot]?.schedule(after: delay) }
    }
}
