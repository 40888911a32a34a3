@testable import FanoutServer
import Testing

/// The per-user publish bucket and its table, without a server: instants are made by the test, so that time is
/// exact and may be made to go backwards.
@Suite("User limits: the publish bucket")
struct UserLimitBucketTests {
    private typealias Bucket = UserLimits.Bucket
    private let start = ContinuousClock.now

    /// A bucket behind a reference, so that #expect can hold a call that takes from it.
    private final class Held {
        var bucket: Bucket
        init(_ bucket: Bucket) { self.bucket = bucket }
        func take(_ rate: Int, _ burst: Int, _ now: ContinuousClock.Instant) -> Bool {
            bucket.take(rate: rate, burst: burst, at: now)
        }
        var tokens: Double { bucket.tokens }
    }

    @Test func aFullBucketGivesItsBurstAtOnceAndThenNothing() {
        let bucket = Held(Bucket(burst: 3, at: start))
        let taken = (0..<5).map { _ in bucket.take(1, 3, start) }
        #expect(taken == [true, true, true, false, false])
        #expect(bucket.tokens == 0)
    }

    @Test func itRefillsAtTheRateAndNeverAboveTheBurst() {
        let bucket = Held(Bucket(burst: 2, at: start))
        #expect(bucket.take(10, 2, start) && bucket.take(10, 2, start))
        #expect(!bucket.take(10, 2, start + .milliseconds(50)), "half a token after 50 ms at 10/s")
        #expect(bucket.take(10, 2, start + .milliseconds(100)), "one token after 100 ms")
        #expect(!bucket.take(10, 2, start + .milliseconds(100)))
        // An hour later it holds the burst, not 36,000.
        let later = start + .seconds(3600)
        #expect(bucket.take(10, 2, later) && bucket.take(10, 2, later))
        #expect(!bucket.take(10, 2, later))
    }

    @Test func refusalsNeverDriveItBelowNothing() {
        let bucket = Held(Bucket(burst: 1, at: start))
        #expect(bucket.take(1, 1, start))
        for _ in 0..<1000 { #expect(!bucket.take(1, 1, start)) }
        #expect(bucket.tokens == 0, "a thousand refusals cost nothing")
        #expect(bucket.take(1, 1, start + .seconds(1)), "one second gives the next one")
    }

    @Test func timeGoingBackwardsRefillsNothingAndIsNotCountedTwice() {
        let bucket = Held(Bucket(burst: 1, at: start + .seconds(10)))
        #expect(bucket.take(1, 1, start + .seconds(10)))
        #expect(!bucket.take(1, 1, start), "ten seconds back: nothing refilled")
        #expect(bucket.tokens >= 0)
        #expect(!bucket.take(1, 1, start + .seconds(10)), "back where it was: still empty")
        #expect(bucket.take(1, 1, start + .seconds(11)), "a second after the latest instant")
    }

    @Test func aLoweredBurstClampsWhatIsHeld() {
        let bucket = Held(Bucket(burst: 100, at: start))
        #expect(bucket.take(1, 2, start) && bucket.take(1, 2, start))
        #expect(!bucket.take(1, 2, start), "a reload to burst 2 applies to a full bucket at once")
    }

    @Test func theTableCountsConnectionsPerUserAndRefusesOneOverTheLimit() {
        var settings = UserLimitSettings()
        settings.maxConnectionsPerUser = 2
        let limits = UserLimits()
        #expect(limits.admit("alice", replacing: nil, settings: settings) == nil)
        #expect(limits.admit("alice", replacing: nil, settings: settings) == nil)
        #expect(limits.admit("alice", replacing: "alice", settings: settings) == nil, "AUTH again as oneself")
        let refusal = limits.admit("alice", replacing: nil, settings: settings)
        #expect(refusal?.line == "-ERR limit too many connections for user alice (max_connections_per_user 2)\n")
        #expect(limits.connections(of: "alice") == 2 && limits.connectionRefusals == 1)
        #expect(limits.admit("bob", replacing: "alice", settings: settings) == nil, "alice's connection became bob's")
        #expect(limits.connections(of: "alice") == 1 && limits.connections(of: "bob") == 1)
        limits.release("alice", settings: settings)
        limits.release("bob", settings: settings)
        #expect(limits.entries.isEmpty, "a user without connections or a refilling bucket has no entry")
    }

    @Test func aUserWithoutConnectionsKeepsItsBucketUntilItRefills() {
        var settings = UserLimitSettings()
        settings.publishRate = 1
        let limits = UserLimits()
        let entry = limits.entry(of: "http-only", settings: settings)
        #expect(limits.takePublish(entry, settings: settings, at: start) == nil)
        let refusal = limits.takePublish(limits.entry(of: "http-only", settings: settings), settings: settings,
                                         at: start)
        #expect(refusal?.line == "-ERR limit publish rate for user http-only over user_publish_rate 1/s\n")
        #expect(limits.publishRefusals == 1)
    }
}
