import FanoutEngine
import FanoutEventLoop
import FanoutHistoryDisk
import Logging

/// What history's upkeep needs from the server: the loop for its timer, the logger, and this process's history.
protocol HistoryUpkeepHost: AnyObject {
    var loop: EventLoop { get }
    var logger: Logger { get }
    var localHistory: any LocalHistory { get }
}

/// This process's history kept in shape: opened (and recovered from `history_dir`) before the loop serves,
/// aged out in slices while it serves, described to INFO, and closed cleanly after the loop stops.
///
/// Worst case: an expiry step checks at most `expiryBudget` subjects; while expired messages are left, steps
/// run a loop pass apart, otherwise `expiryInterval` apart, and only while some subject keeps history.
final class HistoryUpkeep {
    /// Subjects whose retained messages are checked for age per step: a few hundred microseconds' work.
    static let expiryBudget = 1024
    static let expiryInterval = Duration.milliseconds(250)

    unowned let host: any HistoryUpkeepHost
    /// Ages out retained messages while any subject keeps history.
    private var expiryTimer: LoopTimer?

    init(host: any HistoryUpkeepHost) {
        self.host = host
    }

    /// This process's history, with what `history_dir` kept recovered into it when one is set. Recovery reads
    /// the directory before the loop serves anyone; a directory that cannot be made, read or written throws a
    /// `DiskError` naming it (the daemon exits 73).
    static func open(_ configuration: ServerConfiguration, logger: Logger) throws -> any LocalHistory {
        let settings = configuration.history
        let directory = configuration.cluster == nil ? settings.directory : nil
        let started = ContinuousClock.now
        let (history, notes) = try makeLocalEngine(subjectLimit: configuration.limits.maxTrackedSubjects,
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
            let took = ContinuousClock.now - started
            logger.info("history: \(directory), fsync \(settings.fsync.rawValue), read in \(took)")
        }
        return history
    }

    /// Ages out retained messages in slices, so that subjects nobody publishes to let go of theirs too. A step
    /// removes a bounded number of messages; when expired or dropped ones are left, the next step runs on the
    /// next loop pass instead of a tick later, so that a burst expiring at once is freed within a second or so
    /// without stopping the loop.
    func startExpiry() {
        guard expiryTimer == nil, host.localHistory.keepsHistory else { return }
        let timer = LoopTimer(loop: host.loop) { [unowned self] in
            let workLeft = self.host.localHistory.expireHistory(budget: Self.expiryBudget)
            self.expiryTimer?.schedule(after: workLeft ? .zero : Self.expiryInterval)
        }
        timer.schedule(after: Self.expiryInterval)
        expiryTimer = timer
    }

    /// INFO's fields for history on disk; none without `history_dir`.
    func diskInfoFields() -> [(String, String)] {
        guard let disk = host.localHistory.diskFigures else { return [] }
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
    func warnIfDiskChanged(from old: HistorySettings, to fresh: HistorySettings) {
        let used = host.localHistory.diskInUse
        guard fresh.directory != used?.directory || (used != nil && fresh.fsync != used?.policy) else { return }
        let kept = used.map { "\($0.directory) with fsync \($0.policy.rawValue)" } ?? "history on disk off"
        host.logger.warning("history_dir and history_fsync take effect at the next start; keeping \(kept)")
    }

    /// Stops aging out; called before the loop is torn down.
    func tearDown() {
        expiryTimer = nil
    }

    /// Writes the last records, the numbering and a clean state: after the loop has stopped.
    func closeDisk() {
        host.localHistory.closeDisk()
    }
}
