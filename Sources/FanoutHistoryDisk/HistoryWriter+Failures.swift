#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// What the writer does when a write or a sync fails (docs/history.md, "History on disk"): the records
/// concerned are known to the loop as failed, after `state` says a crash renews every epoch; under `always`
/// new records are refused until writes work again.
extension HistoryWriter {
    /// Whether any record with a ticket in `range` failed to be written or synced.
    public func anyFailed(_ range: ClosedRange<UInt64>) -> Bool {
        shared.withLock { $0.failedRecords.overlaps(range) }
    }

    /// Under `always`, while writes fail: why, for the `-ERR` that refuses a record meanwhile. Nil otherwise.
    public var refusal: String? {
        guard policy == .always, refusing.load(ordering: .relaxed) else { return nil }
        return shared.withLock { $0.failing }
    }

    /// Marks `state` so that a crash renews every epoch; synced before it returns (the loop calls it at a
    /// reload that drops a history rule, before any later message is numbered). False when it could not be.
    @discardableResult
    public func markDoubt(_ why: String) -> Bool {
        guard let stateMark else { return true }
        do {
            if try stateMark.mark() { logger.notice("history: \(why): a crash from now on renews every epoch") }
            return true
        } catch {
            logger.error("history: \(why), and \(error): a crash may not renew the epochs it should")
            return false
        }
    }

    /// Records that will never be on disk as written: the doubt goes to `state` first, then they are known to
    /// the loop (before `durableRecords` passes them), which refuses their acknowledgements.
    func recordsFailed(_ tickets: ClosedRange<UInt64>) {
        markDoubt("records \(tickets.lowerBound)...\(tickets.upperBound) of this run were not written")
        shared.withLock { $0.failedRecords.add(tickets) }
    }

    func cutToWritten(_ files: inout SegmentFiles) {
        do {
            let cut = try files.cutToWritten()
            if cut > 0 { shared.withLock { $0.diskBytes -= cut } }
        } catch {
            failed(error)
        }
    }

    func failed(_ error: any Error) {
        let (count, first) = shared.withLock { state -> (UInt64, Bool) in
            state.failures += 1
            let first = state.failing == nil
            state.failing = "\(error)"
            state.failingSince = Self.monotonicNanoseconds()
            state.failingErrno = (error as? DiskError)?.errno ?? EIO
            return (state.failures, first)
        }
        refusing.store(true, ordering: .relaxed)
        // Throttled: a full disk fails every batch.
        if count.nonzeroBitCount == 1 { logger.error("history: \(error) (failure \(count))") }
        if first && policy == .always {
            logger.error("""
                history: writes to \(directory) fail; PUBs to subjects with history answer -ERR unavailable \
                until they work again
                """)
        }
    }

    /// A write and its sync worked: records are taken again.
    func recovered() {
        let was = shared.withLock { state -> Bool in
            defer { state.failing = nil }
            return state.failing != nil
        }
        guard was else { return }
        refusing.store(false, ordering: .relaxed)
        logger.notice("history: writes to \(directory) work again")
    }

    /// While writes fail and nothing is written, whether to try again: a full disk once it has room (1 MiB
    /// free), any other failure after a second.
    func retryDue() -> Bool {
        let (since, code) = shared.withLock { ($0.failingSince, $0.failingErrno) }
        if code == ENOSPC || code == EDQUOT {
            var info = statvfs()
            guard statvfs(directory, &info) == 0 else { return false }
            return UInt64(info.f_bavail) * UInt64(info.f_frsize) >= 1 << 20
        }
        return Self.monotonicNanoseconds() - since >= 1_000_000_000
    }
}
