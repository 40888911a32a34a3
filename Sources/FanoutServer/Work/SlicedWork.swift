import DequeModule
import FanoutEventLoop

/// Work that is done a slice per loop pass so that no client waits long behind another: large SUBs and
/// UNSUBs, CHANNELS scans, replays, a flooding connection's next turn, the subject index's sweep and the
/// history's expiry. Each kind has its queue and the timer that continues it.
struct SlicedWork {
    /// CHANNELS listings under way, oldest first.
    var channelScans = Deque<ChannelsScan>()
    var channelsTimer: LoopTimer?
    /// SUBs and UNSUBs of many patterns under way.
    var subscriptionJobs = Deque<SubscriptionJob>()
    var subscriptionTimer: LoopTimer?
    /// Replays (RESUME, LAST) being sent, and scratch for encoding their slices.
    var replayJobs = Deque<ReplayJob>()
    var replayTimer: LoopTimer?
    var replayScratch: [UInt8] = []
    /// Replays waiting for their clients to read what they were sent (INFO's `replays_waiting`).
    var replaysAwaitingDrain = 0
    /// Connections whose turn ended with commands left, to go on with on the next pass.
    var waitingTurns: [UInt64] = []
    var turnTimer: LoopTimer?
    /// Subscriptions left behind (dead members, emptied sets) since the last sweep of the index.
    var staleSubscriptions = 0
    /// `staleSubscriptions` when the sweep's current cycle began: what a finished cycle has certainly reclaimed.
    var staleAtCycleStart = 0
    /// Runs the index's sweep in slices while departures left anything stale.
    var sweepTimer: LoopTimer?
    /// Ages out retained messages while any subject keeps history.
    var historyTimer: LoopTimer?

    mutating func tearDown() {
        channelsTimer = nil
        channelScans.removeAll()
        subscriptionTimer = nil
        subscriptionJobs.removeAll()
        turnTimer = nil
        sweepTimer = nil
        historyTimer = nil
        replayTimer = nil
        while let job = replayJobs.popFirst() { job.end() }
    }
}
