extension Setting {
    /// The reference table of docs/configuration.md, one row per setting; a test keeps the file equal to it.
    public static func referenceTable() -> String {
        var rows = [
            "| setting | kind | default | environment | flag | on reload (SIGHUP) | meaning |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for setting in all {
            let cells = [
                "`\(setting.name)`", setting.kind.rawValue,
                setting.hasLiteralDefault ? "`\(setting.defaultValue)`" : setting.defaultValue,
                setting.environmentName.map { "`\($0)`" } ?? "file only", setting.flag.map { "`\($0)`" } ?? "",
                setting.reload, setting.summary,
            ]
            rows.append("| " + cells.map { $0.replacingPipes }.joined(separator: " | ") + " |")
        }
        return rows.joined(separator: "\n") + "\n"
    }
}

extension Setting {
    /// Whether the default is a value as written in the file, rather than words ("the host name", "off").
    public var hasLiteralDefault: Bool {
        kind != .section && !["the host name", "off", "none"].contains(defaultValue)
    }
}

private extension String {
    var replacingPipes: String {
        split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\\|")
    }
}
