import FanoutEngine
import FanoutEventLoop
import FanoutProtocol

/// One open question (ASK): who asked, whom it was put to, and what came back so far.
///
/// Memory: O(connections asked). A question never keeps a connection alive: it holds its asker unretained
/// (see `asker`) and the connections it was put to by id.
final class Question {
    let number: UInt64
    /// `<prefix>.<number>`, written once for its reply, its pushes and its DONE.
    let id: QuestionID
    /// The asking connection, unretained: its owner is the connection table, and a departing asker closes its
    /// questions (`QuestionDesk.connectionLeft`) before the table lets it go, and a closed question never reads
    /// it. A weak reference cost a side table entry formed per question, and each retain of a weakly referenced
    /// connection takes the runtime's slow path; read it through `withAsker`.
    private let asker: Unretained<ClientConnection>
    /// The connections the question was put to, each silent, answered or gone.
    var receivers: AskedConnections
    private(set) var asked: Int
    let maxAnswers: UInt64
    var answered = 0
    var gone = 0
    /// Several nodes: how many nodes the question reached (nil until Redis says), and how many have said how
    /// many connections they asked. A standalone question waits for no report.
    var nodesReached: Int?
    private(set) var reports = 0
    let isClustered: Bool
    /// The asker's user, counted in `QuestionDesk.openByOwner` (empty without one), set when it is tracked.
    var owner = ""
    /// Set once by `QuestionDesk.close`: checked where a call may have closed it, in place of a lookup by number.
    var isClosed = false
    /// Bytes counted toward `max_memory` while the question is open (`QuestionDesk.track`, `close`): the
    /// object, its timer and its table of asked connections, as made. A clustered question's count of asked
    /// connections grows with the nodes' reports, but it holds no table for them.
    let countedBytes: Int
    /// Closes the question at its timeout: a timer reused from question to question (`QuestionDeadline`).
    var deadline: QuestionDeadline?

    init(number: UInt64, id: QuestionID, asker: ClientConnection, receivers: AskedConnections, maxAnswers: UInt64,
         isClustered: Bool = false) {
        self.number = number
        self.id = id
        self.asker = Unretained(asker)
        self.isClustered = isClustered
        self.asked = receivers.count
        self.receivers = receivers
        self.maxAnswers = maxAnswers
        countedBytes = 256 + receivers.count * 24
    }

    /// Calls `body` with the asker, neither retained nor released. Only while the question is open (the asker
    /// is then connected or departing), and never across a call that may let it go:
    /// `QuestionDesk.checkBacklog(of:marks:)` takes a strong reference for that.
    @inline(__always)
    func withAsker<Result>(_ body: (ClientConnection) -> Result) -> Result {
        asker.with(body)
    }

    var askerReference: Unretained<ClientConnection> { asker }

    /// Every asked connection answered or vanished, or the cap of answers is reached.
    var isComplete: Bool {
        if maxAnswers > 0 && UInt64(answered) >= maxAnswers { return true }
        if isClustered, nodesReached.map({ reports < $0 }) ?? true { return false }
        return answered + gone >= asked
    }

    /// A node said how many of its connections it asked.
    func report(asked count: Int) {
        reports += 1
        asked += count
    }
}

/// A question another node (or this one, on several nodes) put to this node's connections: whom it asked,
/// so that an answer or a departure is told to the node that asked.
///
/// Held until nothing here is left to wait for: every connection it was put to answered or vanished and every
/// group claim came back, or the origin closed it (`C <id>`), or, should that word be lost, its timeout plus a
/// second.
final class RemoteQuestion {
    let origin: String
    /// Connection id → whether it answered.
    var pending: [UInt64: Bool] = [:]
    /// Connections it was put to that have neither answered nor vanished.
    var silent = 0
    /// Group claims not yet answered by Redis: a won claim still puts the question to a member.
    var claimsLeft = 0
    /// Forgets the question at its timeout.
    var expiry: LoopTimer?

    init(origin: String) {
        self.origin = origin
    }

    var isSettled: Bool { silent == 0 && claimsLeft == 0 }
}
