import FanoutEventLoop

/// Signals, the service manager's status lines and watchdog, and the shutdown's grace period.
struct Lifecycle {
    let startedAt = ContinuousClock.now
    var signalWatchers: [SignalWatcher] = []
    var statusTimer: LoopTimer?
    var watchdogTimer: LoopTimer?
    var graceTimer: LoopTimer?
    var publishedAtLastStatus: UInt64 = 0
    var isShuttingDown = false

    mutating func tearDown() {
        signalWatchers.removeAll()
        statusTimer = nil
        watchdogTimer = nil
        graceTimer = nil
    }
}
