/// Typed look-ups that tell "absent" (nil) from "present but wrong" (a thrown `ConfigProblem` naming the
/// line, the setting, what was expected and what was found). A `FANOUTD_<NAME>` environment variable wins
/// over the file; in one, a list is written with commas.
public struct SettingsReader: Sendable {
    public let file: YAMLDocument
    /// The value of an environment variable, or nil when it is not set.
    public let environment: @Sendable (String) -> String?

    public init(file: YAMLDocument, environment: @escaping @Sendable (String) -> String?) {
        self.file = file
        self.environment = environment
    }

    private enum Source {
        case environment(name: String, text: String)
        case file(YAMLNode)
    }

    private func lookup(_ name: String) -> Source? {
        guard let setting = Setting.named(name), let variable = setting.environmentName else {
            preconditionFailure("'\(name)' is not a setting of the catalogue")
        }
        if let text = environment(variable) { return .environment(name: variable, text: text) }
        guard let node = file.settings[name], node != .null else { return nil }
        return .file(node)
    }

    /// A problem with the value of `name`: at its line when it came from the file, under the variable's
    /// name when it came from the environment.
    private func problem(_ name: String, _ source: Source, expected: String) -> ConfigProblem {
        switch source {
        case .environment(let variable, let text):
            return ConfigProblem(line: nil, "\(variable): expected \(expected), found '\(text)'")
        case .file(let node):
            return ConfigProblem(line: file.line(of: name), "\(name): expected \(expected), found \(node.foundDescription)")
        }
    }

    /// The text of a single value.
    private func scalar(_ name: String, expected: String) throws(ConfigProblem) -> (String, Source)? {
        guard let source = lookup(name) else { return nil }
        switch source {
        case .environment(_, let text), .file(.scalar(let text)): return (text, source)
        case .file: throw problem(name, source, expected: expected)
        }
    }

    public func string(_ name: String) throws(ConfigProblem) -> String? {
        try scalar(name, expected: "text")?.0
    }

    public func strings(_ name: String) throws(ConfigProblem) -> [String]? {
        guard let source = lookup(name) else { return nil }
        switch source {
        case .environment(_, let text):
            return text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingBlanks }
        case .file(.scalar(let text)):
            return [text]
        case .file(.sequence(let items)):
            var texts: [String] = []
            for (index, item) in items.enumerated() {
                guard case .scalar(let text) = item else {
                    let path = "\(name)[\(index)]"
                    throw ConfigProblem(line: file.line(of: path) ?? file.line(of: name),
                                        "\(path): expected text, found \(item.foundDescription)")
                }
                texts.append(text)
            }
            return texts
        case .file:
            throw problem(name, source, expected: "a list of text")
        }
    }

    public func int(_ name: String) throws(ConfigProblem) -> Int? {
        let expected = "a whole number"
        guard let (text, source) = try scalar(name, expected: expected) else { return nil }
        guard let value = Int(text) else { throw problem(name, source, expected: expected) }
        return value
    }

    /// Seconds as a number (fractions allowed), for durations.
    public func seconds(_ name: String) throws(ConfigProblem) -> Duration? {
        let expected = "a number of seconds (0 to 1000000000)"
        guard let (text, source) = try scalar(name, expected: expected) else { return nil }
        guard let duration = Self.duration(text) else { throw problem(name, source, expected: expected) }
        return duration
    }

    /// The longest duration a setting takes, in seconds (about 31 years): longer ones would overflow the
    /// timers' arithmetic, and mean "never" no better.
    public static let maxSeconds = 1_000_000_000.0

    /// `text` as a duration in whole milliseconds, or nil when it is not a number of seconds from 0 to
    /// `maxSeconds`.
    public static func duration(_ text: String) -> Duration? {
        guard let number = Double(text), number >= 0, number <= maxSeconds else { return nil }
        return .milliseconds(Int64((number * 1000).rounded()))
    }

    /// The line a problem with `name` should point at, for checks made after reading (ranges, addresses):
    /// nil when the value came from the environment or is not in the file.
    public func line(of name: String) -> Int? {
        if let variable = Setting.named(name)?.environmentName, environment(variable) != nil { return nil }
        return file.line(of: name)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    public var trimmingBlanks: String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
