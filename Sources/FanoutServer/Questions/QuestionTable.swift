import FanoutEventLoop
import FanoutProtocol

/// The server's open questions, by number; ids are `<prefix>.<number>`, where the prefix is new each time the
/// server starts, so an id is never reused.
///
/// Bound: at most `max_open_questions` open (and per asking connection `max_asks`, and no more than the
/// pool has left free: `Server.askRefusal`); a lookup, an insertion and
/// a removal are O(1); each timeout is one libevent timer, O(log open questions) to arm and to fire in
/// libevent's min-heap, taken from `spareDeadlines` when one is there.
struct QuestionTable {
    var byNumber: [UInt64: Question] = [:]
    /// Open questions by user: the fair share holds for a user's connections together as for one connection.
    /// One entry per user holding open questions, so at most the users file's size.
    var openByOwner: [String: Int] = [:]
    /// Several nodes: the questions put to this node's connections, by id, while any of them is still waited for.
    var remote: [String: RemoteQuestion] = [:]
    private(set) var lastNumber: UInt64 = 0
    /// Bytes the open questions hold, counted by max_memory.
    var bytes = 0
    let prefix: String
    /// The prefix's 8 bytes, as they lie in memory: an id is written and recognised without a String.
    private let prefixWord: UInt64
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

    init() {
        // Random on every start, so that no id is handed out twice even when the epoch survives a restart.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        let prefixBytes = (0..<8).map { _ in alphabet.randomElement(using: &generator)! }
        prefix = String(decoding: prefixBytes, as: UTF8.self)
        prefixWord = prefixBytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    mutating func nextNumber() -> UInt64 {
        lastNumber += 1
        return lastNumber
    }

    func id(of number: UInt64) -> QuestionID {
        QuestionID(prefixWord: prefixWord, number: number)
    }

    /// The number an id of this server names, or nil for an id this server never handed out.
    func number(of id: UnsafeRawBufferPointer) -> UInt64? {
        guard id.count > QuestionID.digitsStart, id.loadUnaligned(as: UInt64.self) == prefixWord,
              id[QuestionID.digitsStart - 1] == UInt8(ascii: ".") else { return nil }
        return DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: id[QuestionID.digitsStart...]))
    }

}

/// The buffers an ASK's receivers and a question's lines are built in, kept from question to question: a class,
/// so that they are filled in place. `receivers` serves one ASK at a time; `line` holds one line at a time,
/// written out before any call that may close a question (a departure builds its DONE there).
final class QuestionScratch {
    var receivers: [Unmanaged<ClientConnection>] = []
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

/// A question's id, `<prefix>.<number>`, written on the stack: at most 8 + 1 + 20 bytes.
struct QuestionID {
    static let digitsStart = 9
    private var storage: (UInt64, UInt64, UInt64, UInt64)
    private let count: Int

    init(prefixWord: UInt64, number: UInt64) {
        storage = (prefixWord, 0, 0, 0)
        var digits = 1
        var rest = number
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        count = Self.digitsStart + digits
        withUnsafeMutableBytes(of: &storage) { [count] raw in
            raw[Self.digitsStart - 1] = UInt8(ascii: ".")
            var value = number
            for index in stride(from: count - 1, through: Self.digitsStart, by: -1) {
                raw[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            }
        }
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeBytes(of: storage) { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    var string: String { withBytes { String(decoding: $0, as: UTF8.self) } }
}
