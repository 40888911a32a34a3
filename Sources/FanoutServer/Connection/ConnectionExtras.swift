import FanoutEventLoop

/// What only some connections need, made the first time one of them does: a publisher's last permitted
/// subject, a subscriber's held publishers, and the metrics' pending-output timestamp. An idle subscriber on a server without users or metrics carries one
/// empty reference for all of it instead of 80 bytes of fields.
final class ConnectionExtras {
    /// The last subject this connection was allowed to publish to: consecutive PUBs skip the check. Kept
    /// here rather than in `Authenticator`: it is read on every PUB of a server with users.
    var lastPermittedSubject: [UInt8] = []
    /// Backpressure, as a subscriber: publishers (by id) whose reading this connection's backlog paused.
    var heldPublishers: [UInt64] = []
    /// When this connection's output last went from empty to pending, while metrics are on.
    var pendingSince: ContinuousClock.Instant?
    /// A RESUME or LAST whose replay is being sent: live messages wait in it until it is.
    var replayJob: ReplayJob?
    /// The patterns held in a group (QSUB), with their group; the others in `subscriptions` are plain.
    var groupOfPattern: [String: String] = [:]
    /// A BPUB whose header was accepted: its subject, until its payload is read.
    var binarySubject: [UInt8]?
    /// Bytes of that payload counted toward max_memory while it is read (`MemoryGuard.payloadBytes`).
    var binaryReserved = 0
    /// Of those, the bytes that have arrived (`MemoryGuard.payloadReceived`).
    var binaryReceived = 0
    /// Numbers of the open questions this connection asked (at most max_asks).
    var asks: [UInt64] = []
    /// Questions put to this connection (their numbers), for its departure; closed ones are pruned lazily.
    var questionsPut: [UInt64] = []
    /// Several nodes: ids of the questions put to this connection through the cluster.
    var remoteQuestionsPut: [String] = []
    /// The transport's adapter, for a connection that is not on the line protocol itself. Kept here rather than
    /// in `HTTPFront`: every delivery to such a connection reads it.
    var adapter: TransportAdapter?
    /// Replies an engine that answers later still owes (several nodes), in command order.
    var pendingReplies: PendingReplies?
    /// Output held until history records are synced (`history_fsync: always`): see `DurableAcknowledgements`.
    var heldOutput: HeldOutput?
}
