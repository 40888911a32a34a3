import FanoutEventLoop
import FanoutProtocol

/// One open question (ASK): who asked, whom it was put to, and what came back so far.
///
/// Memory: O(connections asked). The asker is held weakly: a question never keeps a connection alive, and one
/// whose asker vanished is closed at its departure.
final class Question {
    let number: UInt64
    let id: String
    weak var asker: ClientConnection?
    /// Connection id → whether it answered, for each connection the question was put to and that has not
    /// vanished.
    var pending: [UInt64: Bool]
    private(set) var asked: Int
    let maxAnswers: UInt64
    var answered = 0
    var gone = 0
    /// Several nodes: how many nodes the question reached (nil until Redis says), and how many have said how
    /// many connections they asked. A standalone question waits for no report.
    var nodesReached: Int?
    private(set) var reports = 0
    let isClustered: Bool
    /// Closes the question at its timeout: a libevent timer, kept in libevent's min-heap of timeouts.
    var deadline: LoopTimer?

    init(number: UInt64, id: String, asker: ClientConnection, askedIDs: [UInt64], maxAnswers: UInt64,
         isClustered: Bool = false) {
        self.number = number
        self.id = id
        self.asker = asker
        self.isClustered = isClustered
        self.asked = askedIDs.count
        self.maxAnswers = maxAnswers
        var pending = [UInt64: Bool](minimumCapacity: askedIDs.count)
        for id in askedIDs { pending[id] = false }
        self.pending = pending
    }

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

    /// Bytes a question holds, for the memory bound: the object, its timer and its table of asked connections.
    var estimatedBytes: Int { 256 + asked * 24 }
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

/// The server's open questions, by number; ids are `<prefix>.<number>`, where the prefix is new each time the
/// server starts, so an id is never reused.
///
/// Bound: at most `max_open_questions` open (and `max_asks` per asking connection); a lookup, an insertion and
/// a removal are O(1); each timeout is one libevent timer, O(log open questions) to arm and to fire in
/// libevent's min-heap.
struct QuestionTable {
    var byNumber: [UInt64: Question] = [:]
    /// Several nodes: the questions put to this node's connections, by id, while any of them is still waited for.
    var remote: [String: RemoteQuestion] = [:]
    private(set) var lastNumber: UInt64 = 0
    /// Bytes the open questions hold, counted by max_memory.
    var bytes = 0
    let prefix: String

    init() {
        // Random on every start, so that no id is handed out twice even when the epoch survives a restart.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        prefix = String(decoding: (0..<8).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }

    mutating func nextNumber() -> UInt64 {
        lastNumber += 1
        return lastNumber
    }

    func id(of number: UInt64) -> String { "\(prefix).\(number)" }

    /// The number an id of this server names, or nil for an id this server never handed out.
    func number(of id: UnsafeRawBufferPointer) -> UInt64? {
        let prefixBytes = prefix.utf8
        guard id.count > prefixBytes.count + 1, id[prefixBytes.count] == UInt8(ascii: "."),
              zip(id, prefixBytes).allSatisfy({ $0 == $1 }) else { return nil }
        return DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: id[(prefixBytes.count + 1)...]))
    }
}
