/// One setting of `fanoutd.yaml`: its name, what it holds, its default and what SIGHUP does with it. The
/// catalogue (`Setting.all`) is what an unknown name is checked against, and what docs/configuration.md's
/// reference table is generated from; a test holds config/fanoutd.yaml to it.
public struct Setting: Sendable, Equatable {
    /// The kind of value, as the reader converts it.
    public enum Kind: String, Sendable {
        case wholeNumber = "whole number"
        case seconds = "seconds"
        case text = "text"
        case texts = "list of text"
        /// A nested section (`history:`, `cluster:`, `users:`): only in the file, never in the environment.
        case section = "section"
    }

    /// The name in the file.
    public let name: String
    public let kind: Kind
    /// The default as it is written in config/fanoutd.yaml, or a few words when it has no literal form.
    public let defaultValue: String
    /// The command-line option that overrides it, if any.
    public let flag: String?
    /// What a reload (SIGHUP) does with a changed value.
    public let reload: String
    /// One line on what it does.
    public let summary: String

    init(_ name: String, _ kind: Kind, _ defaultValue: String, flag: String? = nil, reload: String = Self.live,
         _ summary: String) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        self.flag = flag
        self.reload = reload
        self.summary = summary
    }

    static let live = "applied at once"

    /// The environment variable that overrides it (`FANOUTD_MAX_LINE`), or nil for a section.
    public var environmentName: String? {
        kind == .section ? nil : Self.environmentPrefix + name.uppercased()
    }

    public static let environmentPrefix = "FANOUTD_"

    /// The setting called `name`, or nil.
    public static func named(_ name: String) -> Setting? {
        byName[name]
    }

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}
