/// How many members one run of a group's messages (consecutive messages its caller hands out together) is
/// spread over: every member it can, message by message, unless the group's runs have been coming back to back.
///
/// Why: each member a run reaches costs its caller a write, and a write to a loopback socket costs about 5 µs of
/// CPU where a message costs about 0.2 µs. A run of 100 messages spread over 10 members takes 10 writes where a
/// plain subscriber's takes one: a group of 10 cost 2.8 times a plain subscriber's CPU per delivery. So, under
/// sustained load only (`sustainedAfter` runs back to back over at least `sustainedFor`), a run is spread over
/// as many members as its bytes fill turns of `turnBytes` (at least one member), and the group's round robin
/// carries on from run to run, so that every member still takes its share within a few runs, much as TCP's
/// autocorking batches writes only while the previous ones are still queued. A group that was idle (a burst of
/// jobs after a pause) is spread message by message, and no message ever waits: pacing changes who takes a
/// message, never when it is written.
///
/// Kept with the member set of the first of the group's patterns that matches the run's subject: a group holding
/// several overlapping patterns may keep a streak per pattern, which paces it less, never wrongly.
///
/// Cost: O(1) per run, a few words per group.
public struct GroupPacing: Sendable {
    /// Bytes of a turn under sustained load: what one write to one member carries at least.
    public static let turnBytes = 4096
    /// Members one paced run is spread over at most.
    public static let widest = 16
    /// The spread of a run that is not paced: every member, message by message, however many the group holds.
    public static let everyMember = Int.max
    /// A run that starts within this of the group's previous run's end continues a streak.
    public static let backToBack: Duration = .milliseconds(1)
    /// Runs back to back, and the time they span, after which a group counts as under sustained load: one
    /// pipelined burst (or runs cut short by other commands, or by subjects taking turns) read in one go is
    /// over in microseconds and is never paced.
    public static let sustainedAfter = 8
    public static let sustainedFor: Duration = .milliseconds(2)

    private var lastEnd: ContinuousClock.Instant?
    private var streakStart: ContinuousClock.Instant?
    private var lastBytes = 0
    private var streak = 0
    private var isSustainedNow = false

    public init() {}

    /// Starts a run at `now`: how many members it may be spread over to begin with (`spread(forBytes:)` of
    /// the previous run under sustained load, `everyMember` otherwise).
    public mutating func beginRun(at now: ContinuousClock.Instant) -> Int {
        if let lastEnd, now - lastEnd <= Self.backToBack, let streakStart {
            streak = min(streak + 1, Self.sustainedAfter)
            isSustainedNow = streak >= Self.sustainedAfter && now - streakStart >= Self.sustainedFor
        } else {
            streak = 0
            streakStart = now
            isSustainedNow = false
        }
        return isSustainedNow ? Self.spread(forBytes: lastBytes) : Self.everyMember
    }

    /// Whether the runs came back to back, often enough and for long enough, for turns to be paced.
    public var isSustained: Bool { isSustainedNow }

    /// Ends the run that carried `bytes` to the group's members, at `now`.
    public mutating func endRun(at now: ContinuousClock.Instant, bytes: Int) {
        lastEnd = now
        lastBytes = bytes
    }

    /// Members a paced run of `bytes` is spread over: a turn of `turnBytes` each, at least one, at most `widest`.
    /// A paced run that outgrows its start widens as it goes.
    public static func spread(forBytes bytes: Int) -> Int {
        min(widest, max(1, (bytes + turnBytes - 1) / turnBytes))
    }
}
