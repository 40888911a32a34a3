#if canImport(Glibc)
import Glibc
#endif
import Logging

/// One line per event on stderr. Under journald (JOURNAL_STREAM set) each line starts with its syslog
/// priority, `<3>` ... `<7>`, and has no timestamp (the journal adds its own); otherwise lines read
/// `2026-11-22T08:36:03.123Z notice listening on 127.0.0.1:7411 client=3`.
struct DaemonLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let forJournal: Bool

    init(logLevel: Logger.Level, forJournal: Bool) {
        self.logLevel = logLevel
        self.forJournal = forJournal
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Now in UTC, ISO 8601 with milliseconds: `2026-11-22T08:36:03.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(Int(parts.tm_year) + 1900, 4) + "-" + digits(Int(parts.tm_mon) + 1, 2) + "-"
            + digits(Int(parts.tm_mday), 2) + "T" + digits(Int(parts.tm_hour), 2) + ":" + digits(Int(parts.tm_min), 2)
            + ":" + digits(Int(parts.tm_sec), 2) + "." + digits(now.tv_nsec / 1_000_000, 3) + "Z"
    }

    func log(event: LogEvent) {
        var line = forJournal ? "<\(Self.priority(event.level))>" : "\(Self.timestamp()) \(event.level) "
        line += event.message.description
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!)" }
        line += "\n"
        TextFile.write(line, to: STDERR_FILENO)
    }
}
