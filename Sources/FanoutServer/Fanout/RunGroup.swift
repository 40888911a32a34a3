import FanoutEngine
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
    /// A member in the rotation: unretained (its owner is the connection table, and `Fanout.retired` for one
    /// that leaves during the run), its socket, and where the run gathers what goes to it.
    struct Choice {
        let connection: Unretained<ClientConnection>
        /// Unretained: its owner is the run's `GroupDelivery` for this member, which holds it strongly.
        let socket: Unretained<BufferedSocket>
        let id: ObjectIdentifier
        let slot: Int
        /// A plain receiver of the run already: the group counts as served by it, and nothing is queued twice.
        let isPlainReceiver: Bool

        var isConnected: Bool { connection.with { $0.socket != nil } }
    }

    /// A rotation longer than this finds its members in `positions`, a shorter one by looking through it.
    static let scanned = 16

    let name: String
    var sets: [MulticastGroup<ClientConnection>]
    /// The rotation: at most every member of the group (an unpaced run), each once.
    private(set) var chosen: [Choice] = []
    /// Where each member is in `chosen`, once it holds more than `scanned`: a rotation over a large group finds
    /// a member in O(1), and a small one (the usual case) makes no table.
    private var positions: [ObjectIdentifier: Int] = [:]
    var next = 0
    /// The rotation holds every member the group could give (its sets came round to one already in it).
    var isComplete = false
    /// Members the rotation holds at most: `GroupPacing.everyMember`, or at most `GroupPacing.widest` while the
    /// group is under sustained load (`GroupPacing`, kept by the group's first member set), widening as `bytes`
    /// grow; the group's own order continues from run to run.
    var spread = GroupPacing.everyMember
    /// Bytes the run queued to the group's members so far.
    var bytes = 0

    init(name: String, sets: [MulticastGroup<ClientConnection>]) {
        self.name = name
        self.sets = sets
    }

    /// Where the member `id` is in the rotation. O(1) (a look through at most `scanned` choices).
    func position(of id: ObjectIdentifier) -> Int? {
        chosen.count <= Self.scanned ? chosen.firstIndex { $0.id == id } : positions[id]
    }

    mutating func append(_ choice: Choice) {
        chosen.append(choice)
        if chosen.count == Self.scanned + 1 {
            for (position, known) in chosen.enumerated() { positions[known.id] = position }
        } else if chosen.count > Self.scanned {
            positions[choice.id] = chosen.count - 1
        }
    }

    mutating func replace(at position: Int, with choice: Choice) {
        if chosen.count > Self.scanned {
            positions[chosen[position].id] = nil
            positions[choice.id] = position
        }
        chosen[position] = choice
    }

    /// Empties the rotation for the next part of the run, keeping its storage.
    mutating func restart() {
        chosen.removeAll(keepingCapacity: true)
        positions.removeAll(keepingCapacity: true)
        isComplete = false
    }
}
