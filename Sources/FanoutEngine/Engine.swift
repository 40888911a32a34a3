/// What orders each subject's messages: the seam between the server and its two engines. An engine numbers
/// each publish (the seq that `MSG` lines carry), hands the numbered message to this node's fan-out, and
/// answers RESUME and LAST from the history it keeps (protocol 1.1).
///
/// The server holds one `any Engine` and calls it the same way whichever engine it is, and every numbered
/// message reaches subscribers through the same fan-out:
/// - `MemoryEngine` (the default) numbers a publish at once and returns its number (`.numbered`); the server
///   hands it to the fan-out right away. It numbers consecutive publishes to one subject as one run, looked
///   up once (`NumberedMessage.run`), and records where a run left the numbering at `endOfRead` at the latest.
/// - The Redis engine (several nodes) sends a publish to the subject's shard and answers its receipt later;
///   the message reaches the fan-out (its `EngineDeliveries`) when it comes back numbered, like every other
///   node's.
public protocol Engine: AnyObject {
    /// The numbering's epoch for subjects that never restarted: the greeting's `epoch=`.
    var epoch: String { get }

    /// Takes one publish. `receipt` names where a later answer goes; an engine that numbers at once never
    /// evaluates it.
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                 receipt: @autoclosure () -> (receipts: any PublishReceipts, ticket: UInt64)) -> PublishOutcome

    /// A read (or a loop pass's deliveries) is over: what was numbered is recorded, and records go to disk.
    func endOfRead()

    /// Whether a publisher's `+OK` waits until its messages are on disk (`history_fsync: always`).
    var holdsAcknowledgements: Bool { get }

    /// Answers RESUME and LAST: where the subject stands, the retained messages the request entitles the
    /// client to within its byte budget, and (several nodes) the live messages that came while it was read.
    /// The memory engine answers before returning; the Redis engine later, on the loop.
    func replay(_ request: ReplayRequest, answer: @escaping (Result<EngineReplay, EngineFailure>) -> Void)

    /// Whether the engine is told of this node's subscriptions (`retain`, `release`) and may make a SUB wait
    /// for them (`whenInEffect`): an engine shared by several nodes subscribes to what its nodes need. False for
    /// an engine of this process, which none of the three is ever called on.
    var followsSubscriptions: Bool { get }

    /// This node's subscribers hold `pattern` once more (or once less).
    func retain(pattern: String)
    func release(pattern: String)

    /// Calls `done` once messages of `patterns` published from now on are sure to arrive, and returns false;
    /// true when they are already (then `done` is never called).
    func whenInEffect(_ patterns: [String], done: @escaping () -> Void) -> Bool

    /// New history rules and bound (SIGHUP).
    func applyHistory(rules: [HistoryRule], maxBytes: Int)

    /// How many subjects' numbering the engine remembers now (INFO).
    var trackedSubjects: Int { get }

    /// Lets go of the engine's connections: what waits on them is answered as failed.
    func stop()

    /// Whether publishes or writes sent to a shared engine are still unanswered: a stopping server waits for
    /// them (within its grace) so that its last joins and leaves are not lost with the connection.
    var hasWorkInFlight: Bool { get }
}

/// Where an engine hands its numbered messages: the server's fan-out.
public protocol EngineDeliveries: AnyObject {
    /// Queues `message` to this node's subscribers of its subject, after `reset` when there is one; returns how
    /// many connections that is. `epoch` is the subject's epoch (a group's claim names a message by it).
    func deliver(_ message: NumberedMessage, reset: NumberingReset?, epoch: String) -> Int
}

/// A message numbered by an engine, on its way to this node's subscribers. Trivial (no references), so that
/// passing one per publish costs no retain or release.
public struct NumberedMessage {
    public let subject: UnsafeRawBufferPointer
    public let seq: UInt64
    public let payload: UnsafeRawBufferPointer
    /// Pushed as `BMSG` when a line cannot carry it: a BPUB's payload, or anything that came through Redis.
    public let anyBytes: Bool
    /// The engine's numbering run: consecutive messages of one run are of one subject, so the fan-out need not
    /// compare subjects. 0 when the engine does not say.
    public let run: UInt64
    /// Whether the engine keeps the message in history (a publisher's `+OK` may wait for the disk).
    public let recorded: Bool

    public init(subject: UnsafeRawBufferPointer, seq: UInt64, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                run: UInt64 = 0, recorded: Bool = false) {
        self.subject = subject
        self.seq = seq
        self.payload = payload
        self.anyBytes = anyBytes
        self.run = run
        self.recorded = recorded
    }
}

/// `RESET <subject> epoch=<e> seq=<s> missed=<m>`: a subject's numbering restarted under `epoch`, or messages
/// were lost to this node. `seq` is the seq before the next message's; `missed` is how many were lost, nil
/// when unknown (a new numbering).
public struct NumberingReset: Equatable, Sendable {
    public let epoch: String
    public let seq: UInt64
    public let missed: UInt64?

    public init(epoch: String, seq: UInt64, missed: UInt64?) {
        self.epoch = epoch
        self.seq = seq
        self.missed = missed
    }
}

/// What became of a publish.
public enum PublishOutcome {
    /// Numbered at once: `seq` in the engine's run `run` (see `NumberedMessage`), kept in history or not.
    /// The caller hands it to the fan-out.
    case numbered(seq: UInt64, run: UInt64, recorded: Bool)
    /// Sent on: its receipt answers later.
    case pending
    /// Not taken, for this reason (`-ERR unavailable`).
    case refused(String)
}

/// Where an engine that answers later sends a publish's receipt.
public protocol PublishReceipts: AnyObject {
    /// The publish under `ticket` is numbered, and `receivers` nodes had subscribers (`success`), or it failed.
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>)
}

/// An engine could not do what was asked.
public struct EngineFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The request was sent but its answer was lost: it may or may not have taken effect.
    public let outcomeUnknown: Bool

    public init(_ description: String, outcomeUnknown: Bool = false) {
        self.description = description
        self.outcomeUnknown = outcomeUnknown
    }
}

/// An engine's answer to RESUME or LAST, with the live messages that came while it was read (several nodes:
/// they follow the replay).
public struct EngineReplay {
    public var answer: ReplayAnswer
    public var following: [(seq: UInt64, payload: [UInt8])]

    public init(answer: ReplayAnswer, following: [(seq: UInt64, payload: [UInt8])] = []) {
        self.answer = answer
        self.following = following
    }
}

/// An engine of this process follows no subscriptions: every subscription is in effect at once.
extension Engine {
    public var followsSubscriptions: Bool { false }
    public var hasWorkInFlight: Bool { false }
    public func retain(pattern: String) {}
    public func release(pattern: String) {}
    public func whenInEffect(_ patterns: [String], done: @escaping () -> Void) -> Bool { true }
}
