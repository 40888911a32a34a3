import FanoutEngine
import FanoutHistoryDisk

/// Which subjects keep history (protocol 1.1's RESUME and LAST replay it), and the bound on all of it.
public struct HistorySettings: Sendable, Equatable {
    /// The first rule whose pattern matches a subject applies; none means no history (the default).
    public var rules: [HistoryRule] = []
    /// Every retained message counted (payload plus its record); over it, the oldest across all subjects go.
    public var maxBytes = 256 << 20
    /// Where history is kept across restarts (`history_dir`); nil keeps it in memory only (the default).
    public var directory: String?
    /// When what is written there is synced (`history_fsync`).
    public var fsync = FsyncPolicy.everysec

    public init() {}

    func problems() -> [String] {
        var found = rules.compactMap { $0.problem.map { "history: \($0)" } }
        if maxBytes < 0 { found.append("history_max_bytes: must not be negative") }
        return found
    }
}
