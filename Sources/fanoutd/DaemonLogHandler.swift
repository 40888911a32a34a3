import Foundation
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

    private static let timestamp = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

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

    func log(event: LogEvent) {
        var line = forJournal
            ? "<\(Self.priority(event.level))>"
            : "\(Self.timestamp.format(Date())) \(event.level) "
        line += event.message.description
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!)" }
        line += "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
