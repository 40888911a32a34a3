import DequeModule
import FanoutEventLoop

/// Work that is done a slice per loop pass so that no client waits long behind another: large SUBs and
/// UNSUBs, CHANNELS scans, a flooding connection's next turn and the subject index's sweep. Each kind has its
/// queue and the timer that continues it. (Replays and the history's expiry are sliced the same way by their
/// own components, `Replays` and `HistoryUpkeep`.)
final class SlicedWork {
    private let loop: EventLoop
    /// CHANNELS listings under way, oldest first.
    var channelScans = Deque<ChannelsScan>()
    var channelsTimer: LoopTimer?
    /// SUBs and UNSUBs of many patterns under way.
    var subscriptionJobs = Deque<SubscriptionJob>()
    var subscriptionTimer: LoopTimer?
    /// Connections whose turn ended with commands left, to go on with on the next pass.
    var waitingTurns: [UInt64] = []
    var turnTimer: LoopTimer?
    /// Subscriptions left behind (dead members, emptied sets) since the last sweep of the index.
    var staleSubscriptions = 0
    /// `staleSubscriptions` when the sweep's current cycle began: what a finished cycle has certainly reclaimed.
    var staleAtCycleStart = 0
    /// Runs the index's sweep in slices while departures left anything stale.
    var sweepTimer: LoopTimer?

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Runs `action` after `delay` (by default on the next loop pass) through the timer kept at `slot`, made on
    /// first use; a no-op while that timer is already scheduled.
    func schedule(_ slot: ReferenceWritableKeyPath<SlicedWork, LoopTimer?>, after delay: Duration = .zero,
                  _ action: @escaping () -> Void) {
        Self.schedule(&self[keyPath: slot], on: loop, after: delay, action)
    }

    /// The same for a timer a component keeps itself (a replay's slices).
    static func schedule(_ timer: inout LoopTimer?, on loop: EventLoop, after delay: Duration = .zero,
                         _ action: @escaping () -> Void) {
        if timer == nil { timer = LoopTimer(loop: loop, action: action) }
        if timer?.isScheduled == false { timer?.schedule(after: delay) }
    }

    func tearDown() {
        channelsTimer = nil
        channelScans.removeAll()
        subscriptionTimer = nil
        subscriptionJobs.removeAll()
        turnTimer = nil
        sweepTimer = nil
    }
}
