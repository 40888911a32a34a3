import FanoutEventLoop

/// What only some connections need, made the first time one of them does: the fields read on the publish path
/// or per command by a feature's component (a publisher's last permitted subject, the metrics' pending-output
/// timestamp, a replay under way, a BPUB's subject, a transport's adapter, replies owed, output held for the
/// disk). Other per-connection state of a feature lives in its component, keyed by connection id. An idle
/// subscriber on a server without users or metrics carries one empty reference for all of it.
final class ConnectionExtras {
    /// The last subject this connection was allowed to publish to: consecutive PUBs skip the check. Kept
    /// here rather than in `Authenticator`: it is read on every PUB of a server with users.
    var lastPermittedSubject: [UInt8] = []
    /// When this connection's output last went from empty to pending, while metrics are on. Here, not in the
    /// metrics: the fan-out reads it for every receiver of a run while metrics are on.
    var pendingSince: ContinuousClock.Instant?
    /// A RESUME or LAST whose replay is being sent: live messages wait in it until it is. Here, not in
    /// `Replays`: the publish path asks every receiver whether one is under way (`pendingBytes`, a run's lines).
    var replayJob: ReplayJob?
    /// A BPUB whose header was accepted: its subject, until its payload is read. Kept here, not with the
    /// dispatcher: the publish path reads it per read and per BPUB.
    var binarySubject: [UInt8]?
    /// The transport's adapter, for a connection that is not on the line protocol itself. Kept here rather than
    /// in `HTTPFront`: every delivery to such a connection reads it.
    var adapter: TransportAdapter?
    /// Replies an engine that answers later still owes (several nodes), in command order. Kept here rather than
    /// in `ReplyOrder` by id: the dispatcher reads it for every command a clustered node runs.
    var pendingReplies: PendingReplies?
    /// Output held until history records are synced (`history_fsync: always`): see `DurableAcknowledgements`.
    /// Here, not in that component: every write to the connection asks whether its output is held.
    var heldOutput: HeldOutput?
    /// The user's entry in `UserLimits`, from this connection's first publish under user_publish_rate. Here, not
    /// in that component: it is read on every PUB while a rate is set.
    var userLimit: UserLimits.Entry?
}
