import FanoutHistoryDisk
import FanoutProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The embedded engine: numbering and history in this process's memory, bounded by `subjectLimit` and the
/// history rules. Each start is a new epoch, so a client can tell that numbering began again.
public final class MemoryEngine: Engine, LocalHistory {
    /// Where a run's subject is numbered, and its history log when it keeps one.
    struct RunPosition {
        let slot: SequenceTable.Slot
        /// Unretained: the store keeps the log, and a run closes before anything changes the store
        /// (`closeRun`), so that a publish reading the position costs no retain and release of it.
        let log: Unretained<HistoryStore.Log>?
        /// The subject's numbering serial, when its records go to disk.
        let serial: UInt64

    }

    public let epoch: String
    var sequences: SequenceTable
    /// The publishes being numbered now: one subject's, consecutive.
    private var run = NumberingRun<RunPosition>()
    /// When the run opened: its messages' time in history (for `max_age`). A run ends with its read at the
    /// latest, so this is at most a read old; reading the clock per message was a twentieth of a publish.
    private var runOpenedAt = ContinuousClock.now
    let history: HistoryStore
    /// History on disk (`history_dir`), or nil when it lives in memory only.
    var journal: HistoryJournal? {
        didSet { unretainedJournal = journal.map(Unretained.init) }
    }
    /// `journal`, for the publish path: reading the optional reference retained and released it per message.
    private var unretainedJournal: Unretained<HistoryJournal>?
    /// Why publishes to subjects with history are refused now, under `history_fsync: always`: the directory
    /// could not be opened at start, or the writer's writes fail (read as each run opens). Nil almost always.
    var diskRefusal: String?
    /// Whether anyone subscribes to a subject: the numbering of one that nobody follows is forgotten first.
    public var isSubscribed: (String) -> Bool = { _ in false }

    /// Subjects whose numbering is remembered at most (`max_tracked_subjects`); may change on reload, and the
    /// table adapts at its next insertion.
    public var subjectLimit: Int {
        get { sequences.limit }
        set {
            closeRun()
            sequences.limit = newValue
        }
    }

    public init(subjectLimit: Int, history rules: [HistoryRule] = [], historyMaxBytes: Int = 256 << 20,
                epoch: String = MemoryEngine.freshEpoch()) {
        sequences = SequenceTable(limit: subjectLimit)
        history = HistoryStore(rules: rules, maxBytes: historyMaxBytes)
        self.epoch = epoch
    }

    /// A token of 16 random letters and digits: a new numbering's name.
    public static func freshEpoch() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<16).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }

    // MARK: Numbering

    /// Numbers the publish at once. Consecutive publishes to one subject form one run: the subject is looked
    /// up when the run opens, and each publish then costs a comparison of its subject with the run's, a
    /// counter and (when the subject keeps history) a record.
    public func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                        receipt: @autoclosure () -> (receipts: any PublishReceipts, ticket: UInt64)) -> PublishOutcome {
        if !run.continues(with: subject) { openRun(subject) }
        // Under `always`, a record that cannot be written is refused before it is numbered (`diskRefusal`).
        if run.records, let refusal = diskRefusal { return .refused(refusal) }
        let seq = run.next()
        let recorded = run.records
        if recorded, let position = run.position { retain(position, subject: subject, seq: seq, payload: payload) }
        return .numbered(seq: seq, run: run.serial, recorded: recorded)
    }

    public func endOfRead() {
        closeRun()
    }

    /// Opens a run of `subject`, closing the one open: where the subject's numbering stands, looked up once.
    private func openRun(_ subject: UnsafeRawBufferPointer) {
        closeRun()
        let name = String(decoding: subject, as: UTF8.self)
        runOpenedAt = .now
        if let journal { diskRefusal = journal.writer.refusal.map { "history on disk cannot be written: \($0)" } }
        let opened = openPosition(subject: name)
        run.open(subject, name: name, lastSeq: opened.lastSeq, position: opened.position,
                 records: opened.position.log != nil)
    }

    func openPosition(subject: String) -> (lastSeq: UInt64, position: RunPosition) {
        var found = sequences.find(subject)
        let log = history.logForAppending(subject)
        guard let journal, log != nil else {
            return (found.last, RunPosition(slot: found.slot, log: log.map(Unretained.init), serial: 0))
        }
        journal.wallNow = HistoryJournal.wallNanoseconds()
        // A record names its subject's serial: enter a new subject now, so that it has one.
        var serial = sequences.serial(at: found.slot)
        if serial == nil {
            let entered = sequences.ensure(subject, isSubscribed: isKept)
            for forgotten in entered.evicted { history.drop(forgotten) }
            serial = entered.serial
            found = sequences.find(subject)
        }
        return (found.last, RunPosition(slot: found.slot, log: history.logForAppending(subject).map(Unretained.init),
                                        serial: serial ?? 0))
    }

    /// Keeps message `seq` of `subject` (the run's) in its log, and on disk with a history directory.
    func retain(_ position: RunPosition, subject: UnsafeRawBufferPointer, seq: UInt64, payload: UnsafeRawBufferPointer) {
        guard let log = position.log else { return }
        // A record names its subject in 16 bits: a longer subject (max_line allows one) stays in memory only.
        guard let journal = unretainedJournal, subject.count <= HistoryRecord.maxSubjectBytes else {
            log.with { _ = history.append($0, seq: seq, payload: payload, at: runOpenedAt) }
            return
        }
        let segment = journal.with {
            $0.record(seq: seq, serial: position.serial, wallNanoseconds: $0.wallNow, subject: subject, payload: payload)
        }
        log.with { _ = history.append($0, seq: seq, payload: payload, at: runOpenedAt, segment: segment) }
    }

    /// Records where the open run left its subject's numbering, and hands its records to the disk writer.
    /// Every other change of the engine's tables comes after this: the run's position is valid until then.
    func closeRun() {
        guard run.isOpen else { return }
        if let position = run.position {
            for evicted in sequences.store(run.lastSeq, for: run.name, at: position.slot, isSubscribed: isKept) {
                history.drop(evicted)
            }
        }
        run.close()
        journal?.flush()
    }

    /// A subject whose numbering must outlive others': subscribed, or holding history.
    private func isKept(_ subject: String) -> Bool {
        history.log(of: subject) != nil || isSubscribed(subject)
    }

    public var trackedSubjects: Int {
        closeRun()
        return sequences.count
    }

    /// The epoch of `subject`'s numbering: the engine's, unless the subject's numbering restarted since the
    /// engine began (it was forgotten to make room), which gives it a name never used before.
    func epoch(ofSerial serial: UInt64) -> String {
        serial == 0 ? epoch : "\(epoch).\(serial)"
    }

    public func epoch(ofSubject subject: String) -> String {
        closeRun()
        return epoch(ofSerial: sequences.serial(at: sequences.find(subject).slot) ?? 0)
    }

    // MARK: History

    /// New history rules and bound (SIGHUP): applied at once, trimming or dropping what they no longer keep.
    public func applyHistory(rules: [HistoryRule], maxBytes: Int) {
        closeRun()
        noteRulesChange(from: history.rules, to: rules)
        history.apply(rules: rules, maxBytes: maxBytes, at: .now)
        journal?.flush()
    }

    /// Ages out expired messages of up to `budget` subjects, and frees dropped ones, a bounded slice at a time;
    /// for a timer, so that idle subjects let go too. Returns whether work is left for another step soon.
    @discardableResult
    public func expireHistory(budget: Int) -> Bool {
        closeRun()
        let workLeft = history.expireStep(budget: budget, at: .now)
        journal?.flush()
        return compactStep() || workLeft
    }

    public typealias HistoryFigures = FanoutEngine.HistoryFigures

    public var historyFigures: HistoryFigures {
        HistoryFigures(subjects: history.subjectCount, messages: history.count, bytes: history.bytes,
                       evicted: history.evicted)
    }

    public var keepsHistory: Bool { !history.rules.isEmpty || history.count > 0 || history.hasDroppedMessages }

    /// The history directory's figures (INFO and /metrics), or nil without one.
    public var diskFigures: DiskFigures? {
        guard let journal else { return nil }
        let figures = journal.writer.figures
        return DiskFigures(bytes: figures.diskBytes, fsyncLagMilliseconds: figures.fsyncLagMilliseconds,
                           writeQueue: figures.queued, writeDropped: journal.dropped, failures: figures.failures)
    }

    public typealias DiskFigures = FanoutEngine.DiskFigures

    // MARK: Replay

    public func replay(_ request: ReplayRequest, answer: @escaping (Result<EngineReplay, EngineFailure>) -> Void) {
        answer(.success(EngineReplay(answer: replayNow(request))))
    }

    public func stop() {
        closeRun()
    }

    /// The memory engine's answer, at once. RESUME or LAST makes the subject's numbering known (seq 0) when it
    /// was not, so that its epoch stays the one this reply names.
    func replayNow(_ request: ReplayRequest) -> ReplayAnswer {
        closeRun()
        let subject = request.subject
        let (last, serial, evicted) = sequences.ensure(subject, isSubscribed: isKept)
        for forgotten in evicted { history.drop(forgotten) }
        let epoch = epoch(ofSerial: serial)
        let log = history.log(of: subject)
        // Expired messages may wait for a step to remove them: they count as gone already.
        let unexpired = log.map { history.firstUnexpired(in: $0, at: .now) } ?? 0
        let retained = (log?.messages.count ?? 0) - unexpired
        let firstSeq = retained > 0 ? log!.messages[unexpired].seq : last + 1
        // The log ends at `last`, except after a restart whose last records a full writer queue refused: the
        // seqs after its newest are gone, and counted as missed (never replayed as others).
        let newestSeq = retained > 0 ? log!.messages[log!.messages.count - 1].seq : last
        var answer = ReplayAnswer(epoch: epoch, lastSeq: last, replayed: 0, missed: 0)
        // Which retained messages the client is entitled to, as a count of the newest ones.
        var wanted: Int
        switch request.kind {
        case .position:
            return answer
        case .after(let clientEpoch, let after) where clientEpoch == epoch && after <= last:
            let firstWanted = after + 1
            let newestWanted = max(after, newestSeq)
            answer.missed = (firstWanted < firstSeq ? firstSeq - firstWanted : 0) + (last - newestWanted)
            wanted = Int(min(UInt64(retained), newestWanted - after))
        case .after:
            answer.missed = nil
            wanted = retained
        case .newest(let count):
            wanted = Int(min(UInt64(retained), count))
        }
        guard let log, wanted > 0 else { return answer }
        // The newest that fit the budget; the older ones left out count as missed (LAST reports none).
        let fitting = log.newestFitting(wanted, budget: request.budget, subjectBytes: subject.utf8.count)
        if case .after = request.kind, let missed = answer.missed {
            answer.missed = missed + UInt64(wanted - fitting.count)
        }
        guard fitting.count > 0, let newest = log.messages.last?.seq else { return answer }
        let cursor = HistoryCursor(log: log, from: newest - UInt64(fitting.count) + 1, through: newest)
        history.attach(cursor)
        answer.replayed = fitting.count
        answer.bytes = fitting.bytes
        answer.stream = Replay(subject: subject, cursor: cursor, store: history)
        return answer
    }

    /// Replays under way on `subject` that still hold on to its log (for tests: none once they have finished).
    func activeReplayCursors(of subject: String) -> Int {
        history.log(of: subject)?.cursors.count ?? 0
    }

    /// A replay of the memory engine: the subject's retained messages, read as they are sent.
    private final class Replay: ReplayStream {
        private var subject: String
        private let cursor: HistoryCursor
        private weak var store: HistoryStore?

        init(subject: String, cursor: HistoryCursor, store: HistoryStore) {
            self.subject = subject
            self.cursor = cursor
            self.store = store
        }

        func encode(into bytes: inout [UInt8], limit: Int, maxLine: Int) -> Bool {
            subject.withUTF8 {
                cursor.encode(subject: UnsafeRawBufferPointer($0), into: &bytes, limit: limit, maxLine: maxLine)
            }
        }

        func finish() {
            store?.detach(cursor)
        }
    }
}

/// The publishes the memory engine is numbering now: consecutive ones to one subject, whose place in the
/// sequence table (`Position`) was looked up once, when the run opened.
struct NumberingRun<Position> {
    private(set) var subject: [UInt8] = []
    private(set) var name = ""
    var lastSeq: UInt64 = 0
    private(set) var position: Position?
    private(set) var isOpen = false
    /// Whether the run's messages are kept in history: read per publish, where loading `position` would retain
    /// its log.
    private(set) var records = false
    /// Names the run to the fan-out (`NumberedMessage.run`): a new number for every run, never 0.
    private(set) var serial: UInt64 = 0

    /// Whether the run is open and `candidate` is its subject. memcmp: a generic elementsEqual over the bytes
    /// cost ten times as much. Mutating, so that the engine's check reads the run in place rather than copying
    /// it (and retaining what it holds) first.
    @inline(__always)
    mutating func continues(with candidate: UnsafeRawBufferPointer) -> Bool {
        guard isOpen, candidate.count == subject.count else { return false }
        return subject.withUnsafeBytes { run in
            guard let mine = run.baseAddress, let theirs = candidate.baseAddress else { return candidate.isEmpty }
            return memcmp(mine, theirs, candidate.count) == 0
        }
    }

    /// The next seq of the run's subject.
    @inline(__always)
    mutating func next() -> UInt64 {
        lastSeq &+= 1
        return lastSeq
    }

    mutating func open(_ candidate: UnsafeRawBufferPointer, name: String, lastSeq: UInt64, position: Position,
                       records: Bool) {
        self.records = records
        subject.removeAll(keepingCapacity: true)
        subject.append(contentsOf: candidate)
        self.name = name
        self.lastSeq = lastSeq
        self.position = position
        serial &+= 1
        if serial == 0 { serial = 1 }
        isOpen = true
    }

    mutating func close() {
        position = nil
        records = false
        isOpen = false
    }
}
