/// What orders each subject's messages: an engine hands out the seq numbers that `MSG` lines carry and, with
/// history (protocol 1.1), keeps recent messages for `RESUME` and `LAST`.
///
/// The server asks the engine once per publish run (consecutive publishes to one subject in one read), never
/// per message: `openRun` says where the subject's numbering stands, and `closeRun` records where the run left
/// it. `Position` lets an engine find the subject again at close without a second lookup.
///
/// `MemoryEngine` is the embedded default and answers at once. An engine shared by several nodes (Redis) will
/// answer publishes and replays later, on the loop, through completions added to this seam; the numbering
/// calls stay synchronous for the memory engine so that a server without history pays nothing for the seam.
public protocol Engine: AnyObject {
    /// Where an open run's subject is kept, valid until the engine next changes.
    associatedtype Position

    /// The last seq handed out on `subject` (0 when none), and where the subject is kept.
    func openRun(subject: String) -> (lastSeq: UInt64, position: Position)

    /// Records that seqs up to `lastSeq` are used for `subject`. `isSubscribed` is asked only when the engine
    /// must forget a subject to make room, to prefer one that nobody would notice restarting.
    func closeRun(subject: String, at position: Position, lastSeq: UInt64, isSubscribed: (String) -> Bool)

    /// The last seq handed out on `subject`, 0 when none.
    func lastSeq(of subject: String) -> UInt64

    /// How many subjects' numbering the engine remembers now.
    var trackedSubjects: Int { get }
}
