import CLibevent

extension EventLoop {
    /// Runs one pass of the loop, waiting at most `limit` for an event, then flushes as `run()` does after each
    /// pass: for a caller that drives the loop step by step (the in-process test harness) and must not sleep for
    /// ever when nothing is due, as `runOnce(blocking: true)` would.
    ///
    /// The wake-up is an event of its own, made and freed here: a pass that ends earlier leaves nothing armed
    /// behind, so a later `run()` or step is never cut short by it. Only the loop's thread may call this.
    public func runOnce(waitingAtMost limit: Duration) {
        // A timer whose callback does nothing: firing is enough to end the pass.
        guard let wakeUp = event_new(base, -1, 0, { _, _, _ in }, nil) else {
            runOnce(blocking: false)
            return
        }
        defer { event_free(wakeUp) }
        var tv = limit.timeval
        event_add(wakeUp, &tv)
        event_base_loop(base, EVLOOP_ONCE)
        afterEachPass?()
        flushPendingWrites()
    }
}
