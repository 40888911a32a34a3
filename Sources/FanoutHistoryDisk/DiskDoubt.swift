import Synchronization

/// Tickets of records that failed (not written, or not synced), for the loop to refuse their
/// acknowledgements. Bound: `limit` ranges; past it the two oldest merge into one that spans them, which can
/// only make a check answer "failed" for more records, never fewer.
struct FailedRecords: Sendable {
    static let limit = 64
    private(set) var ranges: [ClosedRange<UInt64>] = []

    mutating func add(_ range: ClosedRange<UInt64>) {
        if let last = ranges.last, last.upperBound &+ 1 >= range.lowerBound {
            ranges[ranges.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            return
        }
        ranges.append(range)
        if ranges.count > Self.limit {
            ranges[1] = ranges[0].lowerBound...ranges[1].upperBound
            ranges.removeFirst()
        }
    }

    func overlaps(_ range: ClosedRange<UInt64>) -> Bool {
        // Newest last, and a check is nearly always about recent records.
        for failed in ranges.reversed() {
            if failed.overlaps(range) { return true }
            if failed.upperBound < range.lowerBound { return false }
        }
        return false
    }
}

/// Turns `state`'s `epochs 1` into `epochs 0` (`DiskState`), once per run, synced before it returns. Called
/// from the writer's thread (a failed write or sync) and from the loop (a reload that drops a history rule):
/// the lock makes the second caller wait until the first one's write is synced.
final class StateMark: Sendable {
    private let path: String
    private let epoch: String
    private let done = Mutex(false)

    init(directory: String, epoch: String) {
        path = directory + "/" + HistoryDisk.stateFile
        self.epoch = epoch
    }

    /// True when this call marked it, false when it was marked already.
    func mark() throws(DiskError) -> Bool {
        try done.withLock { (done: inout Bool) throws(DiskError) -> Bool in
            guard !done else { return false }
            try DiskFiles.overwrite(path, with: DiskState(epoch: epoch, clean: false, epochsKept: false).encoded())
            done = true
            return true
        }
    }
}
