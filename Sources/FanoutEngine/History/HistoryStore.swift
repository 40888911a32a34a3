import FanoutCollections
import DequeModule

/// The retained messages of every subject that has a history rule, bounded per subject by its rule (count and
/// age) and in all by `maxBytes`, where the oldest message across all subjects goes first.
///
/// Worst case, per call, whatever clients send:
/// - `append`: O(1) plus O(log subjects) for each message it pushes out (an indexed min-heap orders the subjects
///   by their oldest message): one for the rule's count, at most `removalsPerAppend` for age, and for the byte
///   bound as many as one message's bytes displace (at most `max_line` / `overheadPerMessage`, about 750).
/// - Finding where a replay starts: O(1) (a subject's retained seqs are consecutive); how many of the newest
///   messages fit a byte budget, and which have expired: O(log retained) (binary searches).
/// - `expireStep`: at most its budget of subjects and `removalsPerStep` messages removed or freed; what is
///   left is reported, for another step soon.
/// - `drop` (a subject forgotten, a rule removed) and a restarted numbering: O(1); the messages are freed by
///   later steps, `removalsPerStep` at a time. A replay under way on that subject copies the part it has still
///   to send: at most what its connection's output limit allowed it.
/// - `apply` (a reload, an operator's act): O(retained subjects), plus what the new rules trim at once.
/// A message removed while a replay still has to send it moves to that replay's cursor (O(1) per cursor).
final class HistoryStore {
    /// One retained message. The payload is the only copy the server keeps: replays encode their lines anew.
    struct Message {
        let seq: UInt64
        /// Publish order across all subjects, for evicting the oldest first.
        let ordinal: UInt64
        /// When it was retained, in nanoseconds after the store's `origin`: 8 bytes where an instant takes 16.
        let atNanoseconds: Int64
        /// Payload bytes appended to its log up to and including this message, so that the payload bytes of
        /// any run of consecutive messages is one subtraction.
        let payloadBytesThrough: UInt64
        let payload: [UInt8]
        /// The segment file that holds its record, or 0 when it has none (no history directory).
        var segment: UInt32 = 0
    }

    /// A subject's retained messages, oldest first, with consecutive seqs.
    final class Log {
        let subject: String
        /// The subject's UTF-8 length, which its records' size counts (`SegmentLedger.release`).
        let subjectBytes: Int
        /// The rule (its position in `rules`) that keeps this subject's history.
        var rule: Int
        var messages = Deque<Message>()
        var bytes = 0
        /// Payload bytes ever appended, for `Message.payloadBytesThrough`.
        fileprivate var payloadBytesAppended: UInt64 = 0
        /// Changes whenever the log is emptied at once: a cursor of an earlier generation reads only what it
        /// rescued.
        fileprivate(set) var generation: UInt64 = 0
        /// Replays under way on this subject, which keep the messages they still have to send when those go.
        fileprivate(set) var cursors: [HistoryCursor] = []
        /// Position in `heap` while the log holds messages, else -1: kept by `OldestFirstHeap`.
        var heapIndex = -1
        /// Position in `all`, for the age sweep.
        fileprivate var listIndex = -1

        init(subject: String, rule: Int) {
            self.subject = subject
            subjectBytes = subject.utf8.count
            self.rule = rule
        }

        var firstSeq: UInt64? { messages.first?.seq }
    }

    /// Heap bytes a retained message holds besides its payload: its record, the payload array's 32-byte header,
    /// and the allocator's 16 bytes per block (measured: 1,000,000 messages of 100 bytes took 188 B each).
    static let overheadPerMessage = MemoryLayout<Message>.stride + 32 + 16

    /// What message times count from.
    private let origin = ContinuousClock.now
    /// Expired messages removed at most by one `append`: a burst's worth expiring at once is left to the steps.
    static let removalsPerAppend = 8
    /// Messages removed or freed at most by one `expireStep`: about a millisecond of work.
    static let removalsPerStep = 4096
    /// Messages of dropped logs, freed a slice per step instead of all at once.
    private var graveyard = Deque<(subjectBytes: Int, messages: Deque<Message>)>()

    private(set) var rules: [HistoryRule]
    private(set) var maxBytes: Int
    /// Retained bytes, each message counted as its payload plus `overheadPerMessage`.
    private(set) var bytes = 0
    private(set) var count = 0
    /// Messages pushed out before their rule let them go: by `maxBytes`.
    private(set) var evicted: UInt64 = 0
    private var logs = ShardedDictionary<String, Log>()
    private var all: [Log] = []
    private var heap = OldestFirstHeap()
    private var nextOrdinal: UInt64 = 0
    private var sweepCursor = 0
    /// Which segment files still hold retained records, when history is on disk: told of every message that
    /// leaves.
    var ledger: SegmentLedger? {
        didSet { unretainedLedger = ledger.map(Unretained.init) }
    }
    /// `ledger`, read on every trim without a retain (`ledger` holds it).
    private var unretainedLedger: Unretained<SegmentLedger>?

    init(rules: [HistoryRule], maxBytes: Int) {
        self.rules = rules
        self.maxBytes = maxBytes
    }

    var subjectCount: Int { all.count }

    /// The rule that applies to `subject`, by position, or nil when it keeps no history.
    func rule(for subject: String) -> Int? {
        rules.isEmpty ? nil : HistoryRule.first(of: rules, for: subject)
    }

    func log(of subject: String) -> Log? { logs[subject] }

    /// The subject's log, made if needed, when a rule applies to it.
    func logForAppending(_ subject: String) -> Log? {
        // Without rules nothing is kept (a reload that removes them drops every log): no lookup per run.
        if rules.isEmpty { return nil }
        if let log = logs[subject] { return log }
        guard let rule = rule(for: subject) else { return nil }
        let log = Log(subject: subject, rule: rule)
        log.listIndex = all.count
        all.append(log)
        logs[subject] = log
        return log
    }

    /// Keeps `payload` as message `seq` of `log`, then trims that subject to its rule and everything to
    /// `maxBytes`.
    /// Returns the payload as kept, for a history directory's record to share.
    @discardableResult
    func append(_ log: Log, seq: UInt64, payload: UnsafeRawBufferPointer, at now: ContinuousClock.Instant,
                segment: UInt32 = 0) -> [UInt8] {
        append(log, seq: seq, payload: Array(payload), at: now, trimmedAt: now, segment: segment)
    }

    /// `append` of a message retained at `time` (a recovered one, older than `now`).
    @discardableResult
    func append(_ log: Log, seq: UInt64, payload kept: [UInt8], at time: ContinuousClock.Instant,
                trimmedAt now: ContinuousClock.Instant, segment: UInt32) -> [UInt8] {
        if let last = log.messages.last, last.seq + 1 != seq { clear(log) }
        log.payloadBytesAppended &+= UInt64(kept.count)
        let message = Message(seq: seq, ordinal: nextOrdinal, atNanoseconds: nanoseconds(at: time),
                              payloadBytesThrough: log.payloadBytesAppended, payload: kept, segment: segment)
        let payload = kept
        nextOrdinal &+= 1
        log.messages.append(message)
        let size = payload.count + Self.overheadPerMessage
        log.bytes += size
        bytes += size
        count += 1
        if log.heapIndex < 0 { heap.insert(log) }
        let rule = rules[log.rule]
        while log.messages.count > rule.maxMessages { removeOldest(of: log) }
        if let maxAge = rule.maxAge { _ = trimExpired(log, maxAge: maxAge, at: now, limit: Self.removalsPerAppend) }
        while bytes > maxBytes, let oldest = heap.first {
            removeOldest(of: oldest)
            evicted += 1
        }
        return kept
    }

    /// Drops up to `limit` of what the subject's rule says is too old; returns how many it dropped.
    func trimExpired(_ log: Log, at now: ContinuousClock.Instant, limit: Int = .max) -> Int {
        guard let maxAge = rules[log.rule].maxAge else { return 0 }
        return trimExpired(log, maxAge: maxAge, at: now, limit: limit)
    }

    private func trimExpired(_ log: Log, maxAge: Duration, at now: ContinuousClock.Instant, limit: Int) -> Int {
        let oldestKept = nanoseconds(at: now) - Self.nanoseconds(of: maxAge)
        var removed = 0
        while removed < limit, let first = log.messages.first, first.atNanoseconds < oldestKept {
            removeOldest(of: log)
            removed += 1
        }
        return removed
    }

    /// The index of the log's first message that has not expired (expired ones may wait for a step to remove
    /// them): a binary search, since a log's messages are in the order they were retained.
    func firstUnexpired(in log: Log, at now: ContinuousClock.Instant) -> Int {
        guard let maxAge = rules[log.rule].maxAge else { return 0 }
        let oldestKept = nanoseconds(at: now) - Self.nanoseconds(of: maxAge)
        var low = 0, high = log.messages.count
        while low < high {
            let middle = (low + high) / 2
            if log.messages[middle].atNanoseconds < oldestKept { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func nanoseconds(at instant: ContinuousClock.Instant) -> Int64 { Self.nanoseconds(of: instant - origin) }

    /// Saturates: an age of more than 292 years (max_age: 1e10, "forever") is as good as none.
    private static func nanoseconds(of duration: Duration) -> Int64 {
        let parts = duration.components
        let (whole, overflowed) = parts.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflowed { return parts.seconds < 0 ? .min / 2 : .max / 2 }
        return whole.addingReportingOverflow(parts.attoseconds / 1_000_000_000).partialValue
    }

    /// Ages out expired messages of at most `budget` subjects, continuing where the last step stopped, so
    /// that idle subjects let go of their memory too, and frees what dropped logs left. Removes or frees at
    /// most `removalsPerStep` messages. Returns whether work is left that should not wait for the next tick.
    @discardableResult
    func expireStep(budget: Int, at now: ContinuousClock.Instant) -> Bool {
        var removals = Self.removalsPerStep - freeDropped(limit: Self.removalsPerStep)
        var looked = 0
        while looked < budget && !all.isEmpty && removals > 0 {
            if sweepCursor >= all.count {
                sweepCursor = 0
                break
            }
            let log = all[sweepCursor]
            removals -= trimExpired(log, at: now, limit: removals)
            // Out of removals: this subject may have more expired, and is looked at first next time.
            if removals == 0 { return true }
            if log.messages.isEmpty { forget(log) } else { sweepCursor += 1 }
            looked += 1
        }
        return !graveyard.isEmpty
    }

    /// Frees up to `limit` messages of dropped logs; returns how many.
    private func freeDropped(limit: Int) -> Int {
        var freed = 0
        while freed < limit, !graveyard.isEmpty {
            let take = min(limit - freed, graveyard[0].messages.count)
            if let ledger {
                for message in graveyard[0].messages.prefix(take) {
                    ledger.release(message.segment, subjectBytes: graveyard[0].subjectBytes, payloadBytes: message.payload.count)
                }
            }
            graveyard[0].messages.removeFirst(take)
            freed += take
            if graveyard[0].messages.isEmpty { graveyard.removeFirst() }
        }
        return freed
    }

    /// Whether dropped messages still wait to be freed.
    var hasDroppedMessages: Bool { !graveyard.isEmpty }

    /// Forgets the subject's history (its numbering restarts, or its rule went away).
    func drop(_ subject: String) {
        guard let log = logs[subject] else { return }
        clear(log)
        forget(log)
    }

    /// New rules and bound (a reload): subjects whose rule changed are matched again, trimmed to it at once,
    /// or dropped when no rule applies any more. O(retained subjects + messages dropped).
    func apply(rules fresh: [HistoryRule], maxBytes freshBytes: Int, at now: ContinuousClock.Instant) {
        rules = fresh
        maxBytes = freshBytes
        for log in Array(all) {
            guard let rule = HistoryRule.first(of: fresh, for: log.subject) else {
                drop(log.subject)
                continue
            }
            log.rule = rule
            while log.messages.count > fresh[rule].maxMessages { removeOldest(of: log) }
            _ = trimExpired(log, at: now)
            if log.messages.isEmpty { forget(log) }
        }
        while bytes > maxBytes, let oldest = heap.first {
            removeOldest(of: oldest)
            evicted += 1
        }
    }

    // MARK: History on disk

    /// Calls `body` with the logs from position `cursor` on, in no particular order, until it has returned
    /// `budget` in all or every log was seen; returns whether every log was seen (`cursor` is then 0 again).
    func walkLogs(from cursor: inout Int, budget: Int, _ body: (Log) -> Int) -> Bool {
        var spent = 0
        while spent < budget {
            guard cursor < all.count else {
                cursor = 0
                return true
            }
            spent += body(all[cursor])
            cursor += 1
        }
        return false
    }

    /// Wall-clock nanoseconds of a message retained at `atNanoseconds`, given the wall clock now.
    func wallNanoseconds(of message: Message, wallNow: Int64) -> Int64 {
        wallNow - (nanoseconds(at: .now) - message.atNanoseconds)
    }

    // MARK: Removal

    private func removeOldest(of log: Log) {
        guard let removed = log.messages.popFirst() else { return }
        unretainedLedger?.with {
            $0.release(removed.segment, subjectBytes: log.subjectBytes, payloadBytes: removed.payload.count)
        }
        if !log.cursors.isEmpty { rescue(removed, from: log) }
        let size = removed.payload.count + Self.overheadPerMessage
        log.bytes -= size
        bytes -= size
        count -= 1
        if log.messages.isEmpty { heap.remove(log) } else { heap.oldestRemoved(from: log) }
    }

    /// Empties the log at once: O(1) besides what replays under way on it still have to send. The messages are
    /// freed by later steps.
    private func clear(_ log: Log) {
        if !log.cursors.isEmpty, let first = log.firstSeq {
            for cursor in log.cursors where cursor.next <= cursor.last {
                // Only the part of its range that the log still holds (the rest was rescued already).
                let from = max(cursor.next, first), through = min(cursor.last, first + UInt64(log.messages.count) - 1)
                if from <= through {
                    cursor.rescued.append(contentsOf: log.messages[Int(from - first)...Int(through - first)])
                }
            }
            // The cursors now hold all they still need: what the log holds from here on is not theirs.
            log.cursors.removeAll()
        }
        log.generation &+= 1
        bytes -= log.bytes
        count -= log.messages.count
        log.bytes = 0
        if !log.messages.isEmpty { graveyard.append((log.subject.utf8.count, log.messages)) }
        log.messages = Deque()
        if log.heapIndex >= 0 { heap.remove(log) }
    }

    /// Removes an empty log from the store.
    private func forget(_ log: Log) {
        guard log.listIndex >= 0 else { return }
        logs[log.subject] = nil
        let last = all.count - 1
        if log.listIndex != last {
            all[log.listIndex] = all[last]
            all[log.listIndex].listIndex = log.listIndex
        }
        all.removeLast()
        log.listIndex = -1
    }

    // MARK: Replays under way

    /// Has `cursor` kept the messages of its range that leave its log before it has sent them.
    func attach(_ cursor: HistoryCursor) {
        cursor.log.cursors.append(cursor)
    }

    /// Stops keeping messages for `cursor`: it has sent them all, or its connection went.
    func detach(_ cursor: HistoryCursor) {
        cursor.log.cursors.removeAll { $0 === cursor }
    }

    /// Hands a message leaving `log` to each cursor that has still to send it. Messages leave oldest first,
    /// so each cursor's rescued messages stay in seq order and run on into what the log still holds.
    private func rescue(_ message: Message, from log: Log) {
        for cursor in log.cursors where cursor.stillNeeds(message.seq) {
            cursor.rescued.append(message)
        }
    }
}
