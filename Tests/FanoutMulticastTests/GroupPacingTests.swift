import FanoutMulticast
import Testing

@Suite("GroupPacing")
struct GroupPacingTests {
    private let start = ContinuousClock.now

    /// Runs `count` runs of `bytes`, each `length` long and starting `gap` after the previous one ended; returns
    /// the last spread.
    private func runs(_ pacing: inout GroupPacing, count: Int, bytes: Int, gap: Duration,
                      length: Duration = .microseconds(50), from time: inout ContinuousClock.Instant) -> Int {
        var spread = 0
        for _ in 0..<count {
            time += gap
            spread = pacing.beginRun(at: time)
            time += length
            pacing.endRun(at: time, bytes: bytes)
        }
        return spread
    }

    @Test func anIdleGroupSpreadsOverEveryMemberItCan() {
        var pacing = GroupPacing()
        #expect(pacing.beginRun(at: start) == GroupPacing.everyMember, "the first run ever")
        var time = start
        #expect(runs(&pacing, count: 20, bytes: 16384, gap: .milliseconds(5), from: &time) == GroupPacing.everyMember,
                "runs far apart never pace")
        #expect(!pacing.isSustained)
    }

    @Test func runsBackToBackArePacedByTheirBytes() {
        var pacing = GroupPacing()
        var time = start
        #expect(runs(&pacing, count: GroupPacing.sustainedAfter, bytes: 16384, gap: .microseconds(20), from: &time)
                == GroupPacing.everyMember, "not before the streak is long enough")
        // 70 µs a run: the streak spans 2 ms after about 29 runs.
        #expect(runs(&pacing, count: 20, bytes: 16384, gap: .microseconds(20), from: &time) == GroupPacing.everyMember,
                "not before the streak has lasted")
        #expect(runs(&pacing, count: 10, bytes: 16384, gap: .microseconds(20), from: &time) == 4, "16 KiB: four turns")
        #expect(pacing.isSustained)
        #expect(runs(&pacing, count: 1, bytes: 100, gap: .microseconds(20), from: &time) == 4,
                "paced by the previous run")
        #expect(runs(&pacing, count: 1, bytes: 100, gap: .microseconds(20), from: &time) == 1,
                "a small run: one member")
        // A pause ends the streak: the next burst is spread message by message again.
        #expect(runs(&pacing, count: 1, bytes: 100, gap: .milliseconds(2), from: &time) == GroupPacing.everyMember)
        #expect(!pacing.isSustained)
    }

    /// One pipelined burst read at once makes many runs within microseconds (other commands, or subjects taking
    /// turns, cut it): it is spread message by message however many runs it makes.
    @Test func oneBurstOfManyRunsIsNotPaced() {
        var pacing = GroupPacing()
        var time = start
        #expect(runs(&pacing, count: 500, bytes: 64, gap: .nanoseconds(500), length: .microseconds(1),
                     from: &time) == GroupPacing.everyMember)
        #expect(!pacing.isSustained)
    }

    @Test func aTurnCarriesAtLeastTurnBytes() {
        #expect(GroupPacing.spread(forBytes: 0) == 1)
        #expect(GroupPacing.spread(forBytes: GroupPacing.turnBytes) == 1)
        #expect(GroupPacing.spread(forBytes: GroupPacing.turnBytes + 1) == 2)
        #expect(GroupPacing.spread(forBytes: 1 << 30) == GroupPacing.widest)
    }
}
