import FanoutEventLoop
import FanoutTestSupport

/// Runs `loop` until `condition` holds, or fails after `timeout`. A repeating timer wakes the loop now and
/// then only so that the deadline is checked; the condition itself is met by the loop's events.
func spin(_ loop: EventLoop, timeout: Duration = .seconds(10), _ what: String,
          until condition: () -> Bool) throws {
    let deadline = ContinuousClock.now + timeout
    let wake = LoopTimer(loop: loop, repeating: true) {}
    wake.schedule(after: .milliseconds(20))
    while !condition() {
        guard ContinuousClock.now < deadline else { throw RedisServerFailure("not within \(timeout): \(what)") }
        loop.runOnce(blocking: true)
    }
}
