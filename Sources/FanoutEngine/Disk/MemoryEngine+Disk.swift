import FanoutHistoryDisk
import Logging

extension MemoryEngine {
    /// Bytes after which a segment file is closed and the next begins.
    public static let segmentBytes = 64 << 20
    /// Bytes of records that may wait for the writer; past it, records are not written (counted in INFO).
    public static let writeQueueBytes = 64 << 20

    /// Takes up what `disk` recovered and starts writing history there.
    ///
    /// The numbering rule (docs/history.md, "History on disk"):
    /// - after a clean stop, every subject's numbering and serial (so its epoch) is as it was;
    /// - after a crash with `always`, subjects found on disk keep their epoch and number on from their last
    ///   record; every other subject enters under a serial never used before (a new epoch);
    /// - after a crash with `everysec` or `no`, or when a segment was damaged, every subject enters under a new
    ///   epoch; those found on disk number on from their last record, and keep their retained messages.
    /// The greeting's epoch is the directory's in every case.
    /// Returns lines for the log.
    public func attach(disk: HistoryDisk, policy: FsyncPolicy, logger: Logger,
                       segmentBytes: Int = MemoryEngine.segmentBytes) -> [String] {
        attach(disk: disk, policy: policy, logger: logger, segmentBytes: segmentBytes, writeQueueBytes: Self.writeQueueBytes)
    }

    /// `attach` with a writer queue of `writeQueueBytes` (tests fill a small one) and `faults` to meet.
    func attach(disk: HistoryDisk, policy: FsyncPolicy, logger: Logger, segmentBytes: Int,
                writeQueueBytes: Int, faults: DiskFaults? = nil) -> [String] {
        closeRun()
        var notes = disk.notes
        let ledger = SegmentLedger(first: disk.nextSegment, segmentBytes: segmentBytes)
        for segment in disk.segments { ledger.found(segment.id, bytes: segment.bytes.count) }
        history.ledger = ledger
        let trusted = disk.clean && !disk.damaged
        // After a crash, only a run that said so in `state` (`always`, and nothing its records do not prove)
        // keeps epochs: the policy it ran under counts, not this start's.
        let keepsEpochs = trusted || (disk.epochsKept && !disk.damaged)
        if let numbering = disk.numbering, trusted {
            for entry in numbering.entries { sequences.restore(entry.subject, last: entry.last, serial: entry.serial) }
            sequences.serialBase = numbering.serialBase
            sequences.evictions = numbering.evictions
        } else if disk.existed {
            // A serial above every one used before: the wall clock in nanoseconds grows faster than evictions.
            sequences.serialBase = UInt64(max(1, HistoryJournal.wallNanoseconds()))
        }
        let (messages, subjects) = restoreHistory(from: disk, ledger: ledger, keepsEpochs: keepsEpochs)
        let writer = HistoryWriter(directory: disk.directory, policy: policy, maxQueueBytes: writeQueueBytes,
                                   diskBytes: disk.diskBytes, lockDescriptor: disk.lockDescriptor, epoch: disk.epoch,
                                   faults: faults, logger: logger)
        journal = HistoryJournal(writer: writer, ledger: ledger)
        // Segments that hold nothing retained any more (rules changed, messages aged out while stopped).
        for segment in disk.segments where ledger.isEmpty(segment.id) {
            writer.delete(segment: segment.id)
            ledger.deleted(segment.id)
        }
        if disk.existed {
            let how = trusted ? "clean stop" : (keepsEpochs ? "crash, fsync always: epochs kept" :
                                                    "crash or damage: every subject starts under a new epoch")
            notes.append("history: recovered \(messages) messages of \(subjects) subjects from \(disk.directory) " +
                         "(\(how))")
        }
        return notes
    }

    /// Feeds the records found on disk to the history, subject by subject in seq order; returns how many
    /// messages and subjects it kept.
    private func restoreHistory(from disk: HistoryDisk, ledger: SegmentLedger,
                                keepsEpochs: Bool) -> (messages: Int, subjects: Int) {
        struct Found {
            var records: [(segment: UInt32, seq: UInt64, wall: Int64, payload: [UInt8], bytes: Int)] = []
            var serial: UInt64 = 0
            var inOrder = true

            mutating func take(segment: UInt32, record: HistoryRecordReader.View, bytes: Int) {
                if let last = records.last, last.seq >= record.seq {
                    // A seq that goes back under another serial is a numbering that restarted (the subject was
                    // forgotten to make room): what came before is not this numbering's. Under the same serial
                    // it is a compaction's copy.
                    if record.serial != serial {
                        records.removeAll()
                        inOrder = true
                    } else {
                        inOrder = false
                    }
                }
                records.append((segment, record.seq, record.wallNanoseconds, Array(record.payload), bytes))
                serial = record.serial
            }
        }
        var found: [String: Found] = [:]
        var order: [String] = []
        var lastBytes: [UInt8] = []
        var lastSubject = ""
        disk.forEachRecord { segment, record, bytes in
            if !record.subject.elementsEqual(lastBytes) {
                lastBytes = Array(record.subject)
                lastSubject = String(decoding: record.subject, as: UTF8.self)
            }
            if found[lastSubject] == nil { order.append(lastSubject) }
            found[lastSubject, default: Found()].take(segment: segment, record: record, bytes: bytes)
        }
        let wallNow = HistoryJournal.wallNanoseconds()
        let now = ContinuousClock.now
        var messages = 0
        for subject in order {
            guard var entry = found.removeValue(forKey: subject) else { continue }
            if !entry.inOrder {
                // Keep the last copy of each seq (a record written twice).
                // By seq, then file order, so that the later copy comes last.
                entry.records = entry.records.enumerated()
                    .sorted { ($0.element.seq, $0.offset) < ($1.element.seq, $1.offset) }.map(\.element)
                var unique: [(segment: UInt32, seq: UInt64, wall: Int64, payload: [UInt8], bytes: Int)] = []
                for record in entry.records {
                    if unique.last?.seq == record.seq { unique[unique.count - 1] = record } else { unique.append(record) }
                }
                entry.records = unique
            }
            guard let newest = entry.records.last else { continue }
            // Numbering: on from the last record, never below what a clean stop recorded.
            let (known, knownSerial, _) = sequences.ensure(subject, isSubscribed: { _ in true })
            let serial = keepsEpochs && known <= newest.seq ? entry.serial : knownSerial
            sequences.restore(subject, last: max(known, newest.seq), serial: disk.clean && !disk.damaged ? knownSerial : serial)
            // History: the run of consecutive seqs that ends at the newest record.
            var first = entry.records.count - 1
            while first > 0 && entry.records[first - 1].seq + 1 == entry.records[first].seq { first -= 1 }
            guard let log = history.logForAppending(subject) else { continue }
            for record in entry.records[first...] {
                let age = Duration.nanoseconds(max(0, wallNow - record.wall))
                ledger.adopt(record.segment, bytes: record.bytes)
                history.append(log, seq: record.seq, payload: record.payload, at: now - age, trimmedAt: now,
                               segment: record.segment)
                messages += 1
            }
        }
        return (messages, history.subjectCount)
    }

    /// Messages copied at most by one compaction step: about a millisecond of work.
    static let compactionBudget = 4096

    /// Keeps the files within twice what they retain (plus two segments): when they hold more, the retained
    /// messages of the older segments are written again at the end, a budget per step, and each old segment is
    /// deleted once it holds none (a slow subject would otherwise keep a whole segment for one message). The
    /// copies cost at most the bytes retained per compaction, and a compaction starts only after the files
    /// have grown by as much again. Returns whether work is left for another step soon.
    func compactStep() -> Bool {
        guard let journal else { return false }
        let ledger = journal.ledger
        if journal.compactingBelow == nil {
            guard ledger.diskBytes > 2 * ledger.liveBytes + 2 * ledger.segmentBytes else { return false }
            ledger.roll()
            journal.compactingBelow = ledger.current
            journal.compactionCursor = 0
        }
        guard let below = journal.compactingBelow else { return false }
        let wallNow = HistoryJournal.wallNanoseconds()
        let seenAll = history.walkLogs(from: &journal.compactionCursor, budget: Self.compactionBudget) { log in
            let subjectBytes = log.subject.utf8.count
            let serial = sequences.serial(at: sequences.find(log.subject).slot) ?? 0
            var copied = 1
            for index in log.messages.indices where log.messages[index].segment < below && log.messages[index].segment != 0 {
                let message = log.messages[index]
                ledger.release(message.segment, subjectBytes: subjectBytes, payloadBytes: message.payload.count)
                var subject = log.subject
                let segment = subject.withUTF8 { subject in
                    message.payload.withUnsafeBytes { payload in
                        journal.record(seq: message.seq, serial: serial,
                                       wallNanoseconds: history.wallNanoseconds(of: message, wallNow: wallNow),
                                       subject: UnsafeRawBufferPointer(subject), payload: payload)
                    }
                }
                log.messages[index].segment = segment
                copied += 1
            }
            return copied
        }
        journal.flush()
        if seenAll && !ledger.holdsRecords(before: below) { journal.compactingBelow = nil }
        return journal.compactingBelow != nil
    }

    /// A reload that drops a history pattern (a subject's records stop while its numbering goes on) leaves
    /// the disk short of seqs that clients will see: `state` is marked before any of them is numbered, so that
    /// a crash renews the epochs rather than number them again (`DiskState`).
    func noteRulesChange(from old: [HistoryRule], to fresh: [HistoryRule]) {
        guard let journal, journal.writer.policy == .always else { return }
        let kept = Set(fresh.map(\.subjects))
        guard let dropped = old.first(where: { !kept.contains($0.subjects) }) else { return }
        journal.writer.markDoubt("a reload dropped the history rule for \(dropped.subjects)")
    }

    /// Takes no history on disk this run, under `policy`: the directory could not be opened (`reason`). Under
    /// `always`, publishes to subjects with history are refused, since their `+OK` would mean "on disk".
    public func refuseDisk(_ reason: String, policy: FsyncPolicy) {
        if policy == .always { diskRefusal = "history on disk is off: \(reason)" }
    }

    public var diskInUse: (directory: String, policy: FsyncPolicy)? {
        journal.map { ($0.writer.directory, $0.writer.policy) }
    }

    /// Records that failed to be written or synced, among tickets `range` (`always`): their `+OK` must not go.
    public func recordsFailed(_ range: ClosedRange<UInt64>) -> Bool {
        journal?.writer.anyFailed(range) ?? false
    }

    /// Whether a PUB's acknowledgement waits until its record is synced (`history_fsync: always`).
    public var holdsAcknowledgements: Bool { journal?.writer.policy == .always }
    /// The ticket of the newest record: synced once `durableTicket` reaches it.
    public var recordedTicket: UInt64 { journal?.recorded ?? 0 }
    /// How many records are synced, in the order they were retained.
    public var durableTicket: UInt64 { journal?.writer.durableRecords ?? .max }

    /// Offers the writer the records a full queue left waiting (`always`).
    public func submitWaitingRecords() {
        closeRun()
        journal?.flush()
    }

    /// Writes what is queued and, for a clean stop, the numbering snapshot and a clean state. Blocks until the
    /// writer is done: called after the loop has stopped.
    public func closeDisk() {
        closeRun()
        guard let journal else { return }
        journal.drain()
        let entries = sequences.snapshot().map { NumberingSnapshot.Entry(subject: $0.subject, last: $0.last, serial: $0.serial) }
        let snapshot = NumberingSnapshot(serialBase: sequences.serialBase, evictions: sequences.evictions, entries: entries)
        journal.writer.stop(snapshot: snapshot, state: DiskState(epoch: epoch, clean: true))
        self.journal = nil
    }
}

