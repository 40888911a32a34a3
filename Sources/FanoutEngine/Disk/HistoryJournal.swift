#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FanoutHistoryDisk

/// The memory engine's history on disk: each retained message becomes a record for the write-behind thread,
/// gathered on the loop and handed over once per publish run (one lock per run, not per message).
///
/// The loop never waits on the disk: when the writer's queue is full, the records that do not fit are not
/// written (the messages stay retained in memory) and counted in `dropped`; after a restart, such a subject's
/// history starts after the gap, and `RESUME` counts the gap in `missed`. Under `always` nothing is dropped:
/// the records wait here and are offered again, and the acknowledgements waiting on them wait longer.
final class HistoryJournal {
    let writer: HistoryWriter
    let ledger: SegmentLedger
    /// Records encoded since the last hand-over, one batch per segment, the last being filled.
    private var pending: [EncodedRecords] = []
    /// The segment of the batch being filled.
    private var pendingSegment: UInt32?
    private var pendingBytes = 0
    /// `pending.last`'s buffer, written per record without a retain (`pending` holds it), and its record count.
    private var filling: Unretained<RecordBytes>?
    private var fillingCount = 0
    /// Emptied buffers the writer handed back, filled again before any new one is made.
    private var spares: [RecordBytes] = []
    /// Wall-clock nanoseconds for the records of the run under way: read once per run, not per message.
    var wallNow: Int64 = 0
    /// A compaction under way: the segments before this one are being emptied, and where in the history's
    /// subjects the walk stands.
    var compactingBelow: UInt32?
    var compactionCursor = 0
    /// Records refused by a full queue.
    private(set) var dropped: UInt64 = 0
    /// Records handed to the journal so far: the ticket an acknowledgement waits for (`always` only, where
    /// none is dropped, so that the writer's count of synced records compares with it).
    private(set) var recorded: UInt64 = 0
    /// Bytes after which what was gathered is handed over without waiting for the run's end.
    static let handOverBytes = 1 << 20

    init(writer: HistoryWriter, ledger: SegmentLedger) {
        self.writer = writer
        self.ledger = ledger
        wallNow = Self.wallNanoseconds()
    }

    /// Encodes a message's record into the segment the ledger places it in; returns that segment.
    func record(seq: UInt64, serial: UInt64, wallNanoseconds: Int64, subject: UnsafeRawBufferPointer,
                payload: UnsafeRawBufferPointer) -> UInt32 {
        let size = HistoryRecord.size(subjectBytes: subject.count, payloadBytes: payload.count)
        let segment = ledger.place(size)
        if filling == nil || pendingSegment != segment { startBatch(segment) }
        filling.unsafelyUnwrapped.with {
            HistoryRecord.appendUnsealed(seq: seq, serial: serial, wallNanoseconds: wallNanoseconds, subject: subject,
                                         payload: payload, to: $0)
        }
        fillingCount += 1
        pendingBytes += size
        recorded += 1
        if pendingBytes >= Self.handOverBytes { flush() }
        return segment
    }

    private func startBatch(_ segment: UInt32) {
        closeBatch()
        let bytes = spares.popLast() ?? RecordBytes()
        pending.append(EncodedRecords(segment: segment, bytes: bytes))
        pendingSegment = segment
        filling = Unretained(bytes)
    }

    /// Stores the count of the batch being filled.
    private func closeBatch() {
        if filling != nil { pending[pending.count - 1].count = fillingCount }
        filling = nil
        fillingCount = 0
    }

    /// Hands what was gathered to the writer, and has it delete the segments that emptied (after the records
    /// before them, so that a crash in between leaves the old records, never a hole).
    func flush() {
        closeBatch()
        if !pending.isEmpty {
            let accepted = writer.submit(pending, spares: &spares)
            if accepted < pending.count && writer.policy == .always {
                pending.removeFirst(accepted)
                pendingBytes = pending.reduce(0) { $0 + $1.bytes.count }
            } else {
                for refused in pending[accepted...] { dropped += UInt64(refused.count) }
                pending.removeAll(keepingCapacity: true)
                pendingBytes = 0
            }
        }
        if !ledger.emptied.isEmpty {
            for segment in ledger.emptied where ledger.isEmpty(segment) && segment != ledger.current {
                writer.delete(segment: segment)
                ledger.deleted(segment)
            }
            ledger.emptied.removeAll()
        }
    }

    /// Hands over every record gathered, waiting for room in the queue: for the clean stop, after the loop,
    /// where a record refused now would be a retained message lost by the restart.
    func drain() {
        closeBatch()
        while !pending.isEmpty {
            let accepted = writer.submit(pending, spares: &spares)
            pending.removeFirst(accepted)
            if !pending.isEmpty { usleep(1000) }
        }
        pendingBytes = 0
        flush()
    }

    /// Wall-clock nanoseconds, which records carry so that `max_age` still holds after a restart.
    static func wallNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
