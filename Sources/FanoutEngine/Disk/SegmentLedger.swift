import FanoutHistoryDisk

/// Which segment files hold retained records, counted on the loop: a segment whose last retained record has
/// left (count, age, bytes, a dropped subject) is deleted whole. The loop decides where each record goes, so
/// the count is exact without asking the writer.
///
/// Bound: one dictionary entry per segment file (at most the directory's size over `segmentBytes`, plus one).
final class SegmentLedger {
    struct Usage {
        var records = 0
        var bytes = 0
    }

    /// Where a segment is closed and the next begins.
    let segmentBytes: Int
    private(set) var current: UInt32
    private var currentBytes = 0
    /// The current segment's retained records, kept out of `live` until it closes: a publish costs no hashing.
    private var currentLive = Usage()
    /// Retained records per segment; a segment with none is gone (or about to be).
    private var live: [UInt32: Usage] = [:]
    /// Bytes of every segment file that exists, retained or not.
    private var sizes: [UInt32: Int] = [:]
    private(set) var diskBytes = 0
    /// Segments whose last record left: the journal has the writer delete them.
    var emptied: [UInt32] = []

    init(first: UInt32, segmentBytes: Int) {
        current = first
        self.segmentBytes = segmentBytes
    }

    /// The segment a new record of `bytes` goes to, counted as retained there.
    func place(_ bytes: Int) -> UInt32 {
        if currentBytes > 0 && currentBytes + bytes > segmentBytes { roll() }
        currentBytes += bytes
        diskBytes += bytes
        currentLive.records += 1
        currentLive.bytes += bytes
        return current
    }

    /// A segment found at start-up, with its size.
    func found(_ segment: UInt32, bytes: Int) {
        sizes[segment] = bytes
        diskBytes += bytes
    }

    /// Counts a record found at start-up as retained in `segment`.
    func adopt(_ segment: UInt32, bytes: Int) {
        live[segment, default: Usage()].records += 1
        live[segment, default: Usage()].bytes += bytes
    }

    /// A retained message left; its segment is emptied when it was the last.
    func release(_ segment: UInt32, subjectBytes: Int, payloadBytes: Int) {
        if segment == current {
            currentLive.records -= 1
            currentLive.bytes -= HistoryRecord.size(subjectBytes: subjectBytes, payloadBytes: payloadBytes)
            return
        }
        guard segment != 0, var usage = live[segment] else { return }
        usage.records -= 1
        usage.bytes -= HistoryRecord.size(subjectBytes: subjectBytes, payloadBytes: payloadBytes)
        if usage.records > 0 {
            live[segment] = usage
            return
        }
        live[segment] = nil
        if segment != current { emptied.append(segment) }
    }

    /// Forgets a deleted segment's size.
    func deleted(_ segment: UInt32) {
        diskBytes -= sizes.removeValue(forKey: segment) ?? 0
    }

    /// Whether any segment before `segment` still holds a retained record.

    /// Closes the current segment: records placed from now on go to the next one.
    func roll() {
        guard currentBytes > 0 else { return }
        sizes[current] = currentBytes
        if currentLive.records > 0 { live[current] = currentLive } else { emptied.append(current) }
        currentLive = Usage()
        current &+= 1
        currentBytes = 0
    }

    /// Whether any segment before `segment` still holds a retained record.
    func holdsRecords(before segment: UInt32) -> Bool {
        live.keys.contains { $0 < segment } || (current < segment && currentLive.records > 0)
    }

    /// Whether `segment` holds no retained record.
    func isEmpty(_ segment: UInt32) -> Bool { segment == current ? currentLive.records == 0 : live[segment] == nil }

    /// Bytes of retained records on disk.
    var liveBytes: Int { live.values.reduce(currentLive.bytes) { $0 + $1.bytes } }
}
