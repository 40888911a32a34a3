@testable import FanoutServer
import Testing

@Suite("AuthThrottle")
struct AuthThrottleTests {
    @Test func aHostMayFailItsBurstThenWaitsLongerEachTime() {
        var throttle = AuthThrottle()
        let start = ContinuousClock.now
        var admitted: [Duration?] = []
        for _ in 0..<Int(AuthThrottle.burst) {
            admitted.append(throttle.admit("h", at: start))
            throttle.recordFailure("h", at: start)
        }
        #expect(admitted.allSatisfy { $0 == nil }, "a burst of failures is allowed")
        let emptied = throttle.admit("h", at: start)
        #expect(emptied == .seconds(2), "empty: refused for one refill interval")
        let other = throttle.admit("other", at: start)
        #expect(other == nil, "other hosts are not affected")
        // Back too soon, after the first lockout ends but with the bucket still near empty: twice as long.
        let later = start + .seconds(2)
        let refilled = throttle.admit("h", at: later)
        #expect(refilled == nil, "one token refilled")
        throttle.recordFailure("h", at: later)
        let again = throttle.admit("h", at: later)
        #expect(again == .seconds(4))
        // A host that stops failing starts afresh once its bucket is full.
        let rested = later + .seconds(60)
        let afresh = throttle.admit("h", at: rested)
        #expect(afresh == nil)
        for _ in 0..<Int(AuthThrottle.burst) { throttle.recordFailure("h", at: rested) }
        let forgotten = throttle.admit("h", at: rested)
        #expect(forgotten == .seconds(2), "the lockouts were forgotten")
    }

    @Test func theTableStaysWithinItsCapacity() {
        var throttle = AuthThrottle()
        let start = ContinuousClock.now
        for host in 0..<(AuthThrottle.capacity + 500) { throttle.recordFailure("h\(host)", at: start) }
        #expect(throttle.buckets.count <= AuthThrottle.capacity)
    }

    @Test func aSuppressedLogWritesOncePerIntervalAndSumsUpTheRest() {
        var log = SuppressedLog()
        let start = ContinuousClock.now
        let written = [
            log.shouldWrite(from: "a", at: start),
            log.shouldWrite(from: "b", at: start + .seconds(1)),
            log.shouldWrite(from: "a", at: start + .seconds(2)),
        ]
        #expect(written == [true, false, false])
        let summary = log.takeSummary()
        #expect(summary?.count == 2)
        #expect(summary?.sources == ["a", "b"])
        let nothing = log.takeSummary()
        #expect(nothing == nil)
        let next = log.shouldWrite(from: "a", at: start + SuppressedLog.interval + .seconds(1))
        #expect(next, "the next interval writes again")
    }
}
