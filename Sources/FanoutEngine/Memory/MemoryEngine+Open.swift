#if canImport(Glibc)
import Glibc
#endif
import FanoutHistoryDisk
import Logging

/// This process's engine as the server gets it: in memory, with what a history directory kept recovered into
/// it when `directory` is set (its notes for the log come back with it). Throws `DiskError` for a directory
/// that cannot be made, read or locked.
///
/// A directory that cannot be written for want of space (ENOSPC, EDQUOT) does not stop the server: it serves
/// with history in memory only, says so in an error line, and under `always` refuses publishes to subjects
/// with history (`MemoryEngine.refuseDisk`). The directory is left as it was, for the next start.
public func makeLocalEngine(subjectLimit: Int, rules: [HistoryRule], maxBytes: Int, directory: String?,
                            fsync: FsyncPolicy, logger: Logger) throws -> (any LocalHistory, notes: [String]) {
    guard let directory else {
        return (MemoryEngine(subjectLimit: subjectLimit, history: rules, historyMaxBytes: maxBytes), [])
    }
    let faults: DiskFaults?
    do {
        faults = try DiskFaults.fromEnvironment()
    } catch {
        throw DiskError(operation: error.description + ", for", path: directory, errno: EINVAL)
    }
    let disk: HistoryDisk
    switch openDisk(directory, fsync: fsync) {
    case .success(let opened):
        disk = opened
    case .failure(let error) where error.errno == ENOSPC || error.errno == EDQUOT:
        let engine = MemoryEngine(subjectLimit: subjectLimit, history: rules, historyMaxBytes: maxBytes)
        engine.refuseDisk("\(error)", policy: fsync)
        let refused = fsync == .always ? "PUBs to subjects with history answer -ERR unavailable" :
            "history is kept in memory only"
        return (engine, ["history: \(error): history on disk is OFF until a restart with room; \(refused)"])
    case .failure(let error):
        throw error
    }
    let engine = MemoryEngine(subjectLimit: subjectLimit, history: rules, historyMaxBytes: maxBytes, epoch: disk.epoch)
    let notes = engine.attach(disk: disk, policy: fsync, logger: logger, segmentBytes: MemoryEngine.segmentBytes,
                              writeQueueBytes: MemoryEngine.writeQueueBytes, faults: faults)
    return (engine, notes)
}

/// `HistoryDisk.open` as a value: a typed throw caught and matched on its errno trips the compiler.
private func openDisk(_ directory: String, fsync: FsyncPolicy) -> Result<HistoryDisk, DiskError> {
    do {
        return .success(try HistoryDisk.open(directory: directory, epochsKept: fsync == .always,
                                             freshEpoch: MemoryEngine.freshEpoch))
    } catch {
        return .failure(error)
    }
}
