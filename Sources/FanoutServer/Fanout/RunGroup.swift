import FanoutEventLoop
import FanoutMulticast

/// One group name's part in a publish run: the member sets (one per matching pattern the group holds) and the
/// members chosen so far, which the run's messages take in turn.
///
/// The choice costs a weak-reference load and a retain only when a member joins the rotation (at most
/// `rotation` per run); each message then takes the next member of the rotation by an index, unretained, as a
/// plain receiver is taken (see `PublishRun.Receiver`). A member that left, or whose queued output passed the
/// busy mark, is replaced by the group's next choice, so the spread over runs stays the group's round robin.
struct RunGroup {
    /// A member in the rotation: unretained (the connection table keeps it, `FanoutState.retired` one that
    /// leaves during the run), its socket, and where the run gathers what goes to it.
    struct Choice {
        let connection: Unmanaged<ClientConnection>
        /// Kept alive by the run's `GroupDelivery` for this member, which holds it strongly.
        let socket: Unmanaged<BufferedSocket>
        let slot: Int
        /// A plain receiver of the run already: the group counts as served by it, and nothing is queued twice.
        let isPlainReceiver: Bool

        var isConnected: Bool { connection._withUnsafeGuaranteedRef { $0.socket != nil } }
        var id: ObjectIdentifier { ObjectIdentifier(connection.takeUnretainedValue()) }
    }

    let name: String
    var sets: [MulticastGroup<ClientConnection>]
    var chosen: [Choice] = []
    var next = 0
    /// The rotation holds every member the group could give (its sets came round to one already in it).
    var isComplete = false
    /// Members the rotation holds at most: `GroupPacing.widest`, or fewer while the group is under sustained
    /// load (`GroupPacing`, kept by the group's first member set), widening as `bytes` grow; the group's own
    /// order continues from run to run.
    var spread = GroupPacing.widest
    /// Bytes the run queued to the group's members so far.
    var bytes = 0

    init(name: String, sets: [MulticastGroup<ClientConnection>]) {
        self.name = name
        self.sets = sets
    }
}
