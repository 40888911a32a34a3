import FanoutHistoryDisk
import Logging

/// This process's engine as the server gets it: in memory, with what a history directory kept recovered into
/// it when `directory` is set (its notes for the log come back with it). Throws `DiskError` for a directory
/// that cannot be made, read or written.
public func makeLocalEngine(subjectLimit: Int, rules: [HistoryRule], maxBytes: Int, directory: String?,
                            fsync: FsyncPolicy, logger: Logger) throws -> (any LocalHistory, notes: [String]) {
    guard let directory else {
        return (MemoryEngine(subjectLimit: subjectLimit, history: rules, historyMaxBytes: maxBytes), [])
    }
    let disk = try HistoryDisk.open(directory: directory, freshEpoch: MemoryEngine.freshEpoch)
    let engine = MemoryEngine(subjectLimit: subjectLimit, history: rules, historyMaxBytes: maxBytes, epoch: disk.epoch)
    let notes = engine.attach(disk: disk, policy: fsync, logger: logger)
    return (engine, notes)
}
