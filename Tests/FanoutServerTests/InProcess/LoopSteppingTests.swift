import FanoutEventLoop
import Testing

extension InProcess {
    /// `EventLoop.runOnce(waitingAtMost:)`, the step the harness turns the loop with: bounded when nothing is due,
    /// ended early by an event, and leaving nothing armed behind.
    @Suite("Loop stepping", .timeLimit(.minutes(1)))
    struct LoopSteppingTests {
        @Test func aStepWithNothingDueEndsAtItsBound() throws {
            let loop = try EventLoop()
            let start = ContinuousClock.now
            loop.runOnce(waitingAtMost: .milliseconds(50))
            let elapsed = ContinuousClock.now - start
            // libevent's timers read CLOCK_MONOTONIC_COARSE, whose tick is up to 4 ms.
            #expect(elapsed >= .milliseconds(45) && elapsed < .seconds(5), "waited \(elapsed)")
        }

        @Test func aTimerDueSoonerEndsTheStepAndThePassIsFlushed() throws {
            let loop = try EventLoop()
            var fired = 0, passes = 0
            let timer = LoopTimer(loop: loop) { fired += 1 }
            loop.afterEachPass = { passes += 1 }
            timer.schedule(after: .milliseconds(10))
            let start = ContinuousClock.now
            loop.runOnce(waitingAtMost: .seconds(30))
            #expect(fired == 1 && passes == 1)
            #expect(ContinuousClock.now - start < .seconds(5), "the timer ended the step, not the bound")
        }

        @Test func aStepLeavesNoWakeUpArmedForTheNextRun() throws {
            let loop = try EventLoop()
            let early = LoopTimer(loop: loop) {}
            early.schedule(after: .milliseconds(1))
            loop.runOnce(waitingAtMost: .seconds(30))
            // `run()` returns when no event is left: a wake-up the step left armed would hold it for 30 s.
            var fired = false
            let timer = LoopTimer(loop: loop) { fired = true }
            timer.schedule(after: .milliseconds(20))
            let start = ContinuousClock.now
            try loop.run()
            #expect(fired)
            #expect(ContinuousClock.now - start < .seconds(5), "run() returned once its timer was done")
        }
    }
}
