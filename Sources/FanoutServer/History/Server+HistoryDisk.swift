import FanoutEngine
import FanoutHistoryDisk
import Logging

extension Server {
    /// The in-memory engine, with what `history_dir` kept recovered into it when one is set. Recovery reads the
    /// directory before the loop serves anyone; a directory that cannot be made, read or written throws a
    /// `DiskError` naming it (the daemon exits 73).
    static func makeEngine(_ configuration: ServerConfiguration, logger: Logger) throws -> MemoryEngine {
        let settings = configuration.history
        guard let directory = settings.directory, configuration.cluster == nil else {
            return MemoryEngine(subjectLimit: configuration.limits.maxTrackedSubjects, history: settings.rules,
                                historyMaxBytes: settings.maxBytes)
        }
        let started = ContinuousClock.now
        let disk = try HistoryDisk.open(directory: directory, freshEpoch: MemoryEngine.freshEpoch)
        let engine = MemoryEngine(subjectLimit: configuration.limits.maxTrackedSubjects, history: settings.rules,
                                  historyMaxBytes: settings.maxBytes, epoch: disk.epoch)
        for note in engine.attach(disk: disk, policy: settings.fsync, logger: logger) {
            note.contains("cut") || note.contains("damaged") ? logger.warning("\(note)") : logger.notice("\(note)")
        }
        logger.info("history: \(directory), fsync \(settings.fsync.rawValue), read in \(ContinuousClock.now - started)")
        return engine
    }

    /// INFO's fields for history on disk; none without `history_dir`.
    func historyDiskInfoFields() -> [(String, String)] {
        guard let disk = engine.diskFigures else { return [] }
        return [
            ("history_disk_bytes", String(disk.bytes)),
            ("history_fsync_lag_ms", String(disk.fsyncLagMilliseconds)),
            ("history_write_queue", String(disk.writeQueue)),
            ("history_write_dropped", String(disk.writeDropped)),
            ("history_disk_failures", String(disk.failures)),
        ]
    }

    /// history_dir and history_fsync need a restart: the running server keeps what it started with.
    func warnIfHistoryDiskChanged(from old: HistorySettings, to fresh: HistorySettings) {
        guard fresh.directory != old.directory || fresh.fsync != old.fsync else { return }
        let kept = "\(old.directory ?? "off") with fsync \(old.fsync.rawValue)"
        logger.warning("history_dir and history_fsync take effect at the next start; keeping \(kept)")
    }

    /// Writes the last records, the numbering and a clean state: after the loop has stopped.
    func closeHistoryDisk() {
        engine.closeDisk()
    }
}
