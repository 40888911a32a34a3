/// Why a configuration cannot be used, as one line for a person: where (the file's line, when there is one),
/// which setting, and what was expected against what was found.
public struct ConfigProblem: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    /// The file's line it is about, when it is about one.
    public let line: Int?

    public init(description: String) {
        self.description = description
        line = nil
    }

    /// "line 12: max_line: expected a whole number, found 'a lot'", or without the line for the environment.
    public init(line: Int?, _ text: String) {
        description = line.map { "line \($0): \(text)" } ?? text
        self.line = line
    }

    /// An unknown name, with the nearest known one when there is a close one.
    /// "line 4: users.alice: unknown setting 'subscibe'; did you mean subscribe?"
    public static func unknown(_ name: String, at line: Int?, under path: String? = nil, what: String = "setting",
                               known: [String]) -> ConfigProblem {
        var text = (path.map { "\($0): " } ?? "") + "unknown \(what) '\(name)'"
        if let nearest = NearestName.find(name, among: known) { text += "; did you mean \(nearest)?" }
        return ConfigProblem(line: line, text)
    }
}
