import FanoutEventLoop

/// What only some connections need, made the first time one of them does: authentication (the user, failed
/// attempts and their timer), a publisher's last permitted subject, a subscriber's held publishers, and the
/// metrics' pending-output timestamp. An idle subscriber on a server without users or metrics carries one
/// empty reference for all of it instead of 80 bytes of fields.
final class ConnectionExtras {
    /// The authenticated user's name, for logs and permission reloads.
    var userName: String?
    var authFailures = 0
    /// Closes the connection at auth_timeout unless it has authenticated.
    var authDeadline: LoopTimer?
    /// Ends the pause after a failed AUTH.
    var retryDelay: LoopTimer?
    /// Closes a TLS connection whose handshake has not finished within tls_handshake_timeout.
    var handshakeDeadline: LoopTimer?
    /// The last subject this connection was allowed to publish to: consecutive PUBs skip the check.
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
    /// The transport's adapter, for a connection that is not on the line protocol itself.
    var adapter: TransportAdapter?
    /// Replies an engine that answers later still owes (several nodes), in command order. Kept here rather than
    /// in `ReplyOrder` by id: the dispatcher reads it for every command a clustered node runs.
    var pendingReplies: PendingReplies?
    /// Output held until history records are synced (`history_fsync: always`): see `DurableAcknowledgements`.
    var heldOutput: HeldOutput?
}
