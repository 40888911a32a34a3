import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutSubjects

/// What the questions need from the server: where receivers are found and how they are chosen, delivery and
/// backlog checks (`fanout`), the memory bound, limits, stats, the loop for deadlines, and on several nodes the
/// cluster and the replies an engine still owes.
protocol QuestionHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var loop: EventLoop { get }
    var stats: ServerStats { get set }
    var index: SubjectIndex<ClientConnection> { get }
    var fanout: Fanout<Server> { get }
    var auth: Authenticator { get }
    var connections: ConnectionTable { get }
    var cluster: ClusterNode? { get }
    var replies: ReplyOrder { get }
    var memory: MemoryGuard! { get }
}

/// Questions (1.2): the server's open questions and the work of each, from ASK to DONE: who is asked, the fair
/// share, answers, departures and deadlines (`QuestionDesk+Asking`, `+Deadlines`), and on several nodes the
/// questions put through the cluster (`+Cluster`).
///
/// Bound: at most `max_open_questions` open (and per asking connection `max_asks`, and no more than the pool has
/// left free: `askRefusal`); a lookup, an insertion and a removal are O(1); each timeout is one libevent timer,
/// O(log open questions) to arm and to fire in libevent's min-heap, taken from `spareDeadlines` when one is there.
/// Per connection it keeps entries only for one that asked or was asked, by id, so an idle subscriber costs
/// nothing here.
final class QuestionDesk {
    /// The server, which outlives its components.
    unowned let host: any QuestionHost
    /// The open questions, by number.
    private(set) var byNumber: [UInt64: Question] = [:]
    /// Open questions by user: the fair share holds for a user's connections together as for one connection.
    /// One entry per user holding open questions, so at most the users file's size.
    private(set) var openByOwner: [String: Int] = [:]
    /// Numbers of the open questions each asking connection asked (at most max_asks each), by connection id.
    private var asksByConnection: [UInt64: [UInt64]] = [:]
    /// Questions put to each connection (their numbers), by connection id, for its departure; closed ones are
    /// pruned lazily (`notePut`).
    var putByConnection: [UInt64: [UInt64]] = [:]
    /// Several nodes: the questions put to this node's connections, by id, while any of them is still waited for.
    var remote: [String: RemoteQuestion] = [:]
    /// Several nodes: ids of the questions put to each connection through the cluster, by connection id.
    var remotePutByConnection: [UInt64: [String]] = [:]
    var numbering = QuestionNumbering()
    /// Bytes the open questions hold, counted by max_memory.
    private(set) var bytes = 0
    /// Timers of closed questions, armed again for the next ones instead of making a timer and a libevent event
    /// per question. At most `spareDeadlineLimit` (about 200 bytes each); the rest are freed.
    var spareDeadlines: [QuestionDeadline] = []
    static let spareDeadlineLimit = 1024
    /// The buffers an ASK's receivers and a question's lines are built in, kept from question to question.
    let scratch = QuestionScratch()
    /// An ASK is checking its receivers' backlogs, which may drop any connection (its own past
    /// max_pending_bytes, the largest past max_memory): one dropped meanwhile is kept in `Fanout.retired`
    /// until the checks are over, as the ASK holds its receivers unretained.
    var isCheckingReceivers = false

    init(host: any QuestionHost) {
        self.host = host
    }

    /// How many questions `connection` asked are open.
    func openAsks(of connection: ClientConnection) -> Int {
        asksByConnection[connection.id]?.count ?? 0
    }

    /// Counts an open question in the table, toward `max_memory` and among its asker's; `close` undoes each.
    func track(_ question: Question, askedBy asker: ClientConnection) {
        byNumber[question.number] = question
        bytes += question.countedBytes
        asksByConnection[asker.id, default: []].append(question.number)
        if let user = host.auth.userName(of: asker) {
            question.owner = user
            openByOwner[user, default: 0] += 1
        }
    }

    /// Closes a question once: the asker gets its `DONE` (after every `ANSWER` push, which went before it).
    /// `quietly`: no DONE (the ASK was answered with an error). O(max_asks) for the asker's list.
    func close(_ question: Question, quietly: Bool = false) {
        guard !question.isClosed else { return }
        question.isClosed = true
        byNumber[question.number] = nil
        bytes -= question.countedBytes
        if !question.owner.isEmpty, let open = openByOwner[question.owner] {
            openByOwner[question.owner] = open > 1 ? open - 1 : nil
        }
        releaseDeadline(of: question)
        // Quietly too: an ASK whose outcome is unknown may have reached nodes that put it to their receivers.
        if question.isClustered { clusterQuestionClosed(question) }
        let delivers = question.withAsker { asker in
            forgetAsk(question.number, of: asker.id)
            return asker.socket != nil && !quietly
        }
        guard delivers else { return }
        scratch.resetLine()
        question.id.withBytes {
            Encoder.appendDone(id: $0, asked: question.asked, answered: question.answered, gone: question.gone,
                               to: &scratch.line)
        }
        question.withAsker { asker in
            // On several nodes the ASK's own reply may still wait for Redis: DONE goes behind it.
            if question.isClustered {
                host.replies.deliverBehindPendingReplies(scratch.line, to: asker)
            } else {
                host.fanout.deliver(scratch.line, to: asker)
            }
        }
    }

    private func forgetAsk(_ number: UInt64, of connection: UInt64) {
        guard var asks = asksByConnection[connection], let slot = asks.firstIndex(of: number) else { return }
        asks.remove(at: slot)
        asksByConnection[connection] = asks.isEmpty ? nil : asks
    }

    /// A departing connection: the questions it asked close (later answers get `+OK 0`), and it counts as
    /// gone in the questions put to it that it had not answered, so no one waits for it. Three lookups for a
    /// connection that neither asked nor was asked, none while no connection has.
    func connectionLeft(_ connection: ClientConnection) {
        guard !asksByConnection.isEmpty || !putByConnection.isEmpty || !remotePutByConnection.isEmpty else { return }
        // O(its open questions, at most max_asks).
        if let asks = asksByConnection.removeValue(forKey: connection.id) {
            for number in asks {
                if let question = byNumber[number] { close(question) }
            }
        }
        if remotePutByConnection[connection.id] != nil { clusterQuestionsLeft(by: connection) }
        guard let put = putByConnection.removeValue(forKey: connection.id) else { return }
        for number in put {
            guard let question = byNumber[number], question.receivers.settle(connection.id, as: .gone) else {
                continue
            }
            question.gone += 1
            if question.isComplete { close(question) }
        }
    }

    /// Remembers that a question was put to `receiver`, pruning closed ones as the list doubles: O(1) amortised,
    /// and the list stays within twice the questions open on it.
    func notePut(_ number: UInt64, to receiver: ClientConnection) {
        let count = putByConnection[receiver.id]?.count ?? 0
        if count >= 16 && count & (count - 1) == 0 {
            putByConnection[receiver.id]?.removeAll { byNumber[$0] == nil }
        }
        putByConnection[receiver.id, default: []].append(number)
    }

    /// The server stops: open questions are forgotten (no DONE) before the connections they name go.
    func forgetAll() {
        for question in byNumber.values {
            // Closed for whatever still holds it (a cluster callback): it never reads its asker again.
            question.isClosed = true
            question.deadline?.timer.cancel()
        }
        byNumber.removeAll()
        asksByConnection.removeAll()
        putByConnection.removeAll()
        spareDeadlines.removeAll()
        bytes = 0
    }
}

/// The buffers an ASK's receivers and a question's lines are built in, kept from question to question: a class,
/// so that they are filled in place. `receivers` serves one ASK at a time; `line` holds one line at a time,
/// written out before any call that may close a question (a departure builds its DONE there).
final class QuestionScratch {
    /// Unretained: the connection table owns each receiver for as long as the ASK that gathered it runs, and
    /// one dropped by a backlog check meanwhile is kept in `Fanout.retired` (`isCheckingReceivers`).
    var receivers: [Unretained<ClientConnection>] = []
    var line: [UInt8] = []

    /// Empties the buffers, letting go of a large question's memory rather than keeping it for every later one.
    func reset() {
        if receivers.capacity > 4096 { receivers = [] } else { receivers.removeAll(keepingCapacity: true) }
        resetLine()
    }

    func resetLine() {
        if line.capacity > 64 * 1024 { line = [] } else { line.removeAll(keepingCapacity: true) }
    }
}
