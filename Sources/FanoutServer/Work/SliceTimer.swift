import FanoutEventLoop

/// The timer of work done a slice per loop pass so that no client waits long behind another (large SUBs and
/// UNSUBs, the index's sweep, CHANNELS scans, replays, a flooding connection's next turn), made on first use:
/// `schedule` is a no-op while it is already scheduled, so the work goes on once per pass however often it
/// asks. Each component keeps its own, beside the queue it continues.
struct SliceTimer {
    private var timer: LoopTimer?

    /// Runs `action` after `delay` (by default on the next loop pass). The action given first is kept.
    mutating func schedule(on loop: EventLoop, after delay: Duration = .zero, _ action: @escaping () -> Void) {
        if timer == nil { timer = LoopTimer(loop: loop, action: action) }
        if timer?.isScheduled == false { timer?.schedule(after: delay) }
    }

    /// Frees the timer, cancelling what it would run.
    mutating func tearDown() {
        timer = nil
    }
}
