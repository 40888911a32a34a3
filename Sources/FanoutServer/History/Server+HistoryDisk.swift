import FanoutEngine
import FanoutHistoryDisk
import Logging

extension Server {
    /// This process's engine, with what `history_dir` kept recovered into it when one is set. Recovery reads
    /// the directory before the loop serves anyone; a directory that cannot be made, read or written throws a
    /// `DiskError` naming it (the daemon exits 73).
    static func makeEngine(_ configuration: ServerConfiguration, logger: Logger) throws -> any LocalHistory {
        let settings = configuration.history
        let directory = configuration.cluster == nil ? settings.directory : nil
        let started = ContinuousClock.now
        let (engine, notes) = try makeLocalEngine(subjectLimit: configuration.limits.maxTrackedSubjects,
                                                  rules: settings.rules, maxBytes: settings.maxBytes,
                                                  directory: directory, fsync: settings.fsync, logger: logger)
        for note in notes {
            if note.contains("is OFF") {
                logger.error("\(note)")
            } else {
                note.contains("cut") || note.contains("damaged") ? logger.warning("\(note)") : logger.notice("\(note)")
            }
        }
        if let directory {
            logger.info("history: \(directory), fsync \(settings.fsync.rawValue), read in \(ContinuousClock.now - started)")
        }
        return engine
    }

    /// INFO's fields for history on disk; none without `history_dir`.
    func historyDiskInfoFields() -> [(String, String)] {
        guard let disk = local.diskFigures else { return [] }
        return [
            ("history_disk_bytes", String(disk.bytes)),
            ("history_fsync_lag_ms", String(disk.fsyncLagMilliseconds)),
            ("history_write_queue", String(disk.writeQueue)),
            ("history_write_dropped", String(disk.writeDropped)),
            ("history_disk_failures", String(disk.failures)),
        ]
    }

    /// history_dir and history_fsync need a restart: the running server keeps what it started with, which the
    /// warning names (not the previous reload's file, which may never have been used).
    func warnIfHistoryDiskChanged(from old: HistorySettings, to fresh: HistorySettings) {
        let used = local.diskInUse
        guard fresh.directory != used?.directory || (used != nil && fresh.fsync != used?.policy) else { return }
        let kept = used.map { "\($0.directory) with fsync \($0.policy.rawValue)" } ?? "history on disk off"
        logger.warning("history_dir and history_fsync take effect at the next start; keeping \(kept)")
    }

    /// Writes the last records, the numbering and a clean state: after the loop has stopped.
    func closeHistoryDisk() {
        local.closeDisk()
    }
}
