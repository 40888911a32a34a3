/// What orders each subject's messages: an engine hands out the seq numbers that `MSG` lines carry and, with
/// history (protocol 1.1), keeps recent messages for `RESUME` and `LAST`.
///
/// The server asks the engine once per publish run (consecutive publishes to one subject in one read), never
/// per message, unless the subject keeps history: `openRun` says where the subject's numbering stands and
/// whether its messages are retained, `retain` keeps each one, and `closeRun` records where the run left the
/// numbering. `RunPosition` lets an engine find the subject again without a second lookup.
///
/// `MemoryEngine` is the embedded default and answers at once. An engine shared by several nodes (Redis)
/// answers replays later, on the loop: `replay` hands its answer to a closure that may run after it returns,
/// and the server holds the asking connection's later commands back until it has.
public protocol Engine: AnyObject {
    /// Where an open run's subject is kept, valid until the engine next changes.
    associatedtype RunPosition

    /// The numbering's epoch for subjects that never restarted: the greeting's `epoch=`.
    var epoch: String { get }

    /// The last seq handed out on `subject` (0 when none), and where the subject is kept.
    func openRun(subject: String) -> (lastSeq: UInt64, position: RunPosition)

    /// Keeps message `seq` of an open run when its subject has history.
    func retain(_ position: RunPosition, seq: UInt64, payload: UnsafeRawBufferPointer)

    /// Records that seqs up to `lastSeq` are used for `subject`.
    func closeRun(subject: String, at position: RunPosition, lastSeq: UInt64)

    /// Answers RESUME and LAST: where the subject stands and the retained messages the request entitles the
    /// client to, within its byte budget.
    func replay(_ request: ReplayRequest, answer: @escaping (ReplayAnswer) -> Void)

    /// How many subjects' numbering the engine remembers now.
    var trackedSubjects: Int { get }
}
