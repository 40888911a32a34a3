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
    private var pending: [QueuedRecord] = []
    /// A compaction under way: the segments before this one are being emptied, and where in the history's
    /// subjects the walk stands.
    var compactingBelow: UInt32?
    var compactionCursor = 0
    /// Records refused by a full queue.
    private(set) var dropped: UInt64 = 0
    /// Records handed to the journal so far: the ticket an acknowledgement waits for (`always` only, where
    /// none is dropped, so that the writer's count of synced records compares with it).
    private(set) var recorded: UInt64 = 0

    init(writer: HistoryWriter, ledger: SegmentLedger) {
        self.writer = writer
        self.ledger = ledger
        pending.reserveCapacity(256)
    }

    /// The segment a message's record goes to.
    func place(subjectBytes: Int, payloadBytes: Int) -> UInt32 {
        ledger.place(HistoryRecord.size(subjectBytes: subjectBytes, payloadBytes: payloadBytes))
    }

    func record(_ record: QueuedRecord) {
        pending.append(record)
        recorded += 1
        if pending.count >= 4096 { flush() }
    }

    /// Hands what was gathered to the writer, and has it delete the segments that emptied (after the records
    /// before them, so that a crash in between leaves the old records, never a hole).
    func flush() {
        if !pending.isEmpty {
            let accepted = writer.submit(pending)
            if accepted < pending.count && writer.policy == .always {
                pending.removeFirst(accepted)
            } else {
                if accepted < pending.count { dropped += UInt64(pending.count - accepted) }
                pending.removeAll(keepingCapacity: true)
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

    /// Wall-clock nanoseconds, which records carry so that `max_age` still holds after a restart.
    static func wallNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
