/// A configuration file as read: its top-level settings, and the line each value came from, so that a
/// problem found later (a wrong type, an unknown name) can say where to look.
public struct YAMLDocument: Equatable, Sendable {
    /// The top-level mapping.
    public let settings: [String: YAMLNode]
    /// Lines by path: `max_line`, `history[0].subjects`, `users.alice.publish[1]`.
    public let lineNumbers: [String: Int]

    public init(settings: [String: YAMLNode], lineNumbers: [String: Int]) {
        self.settings = settings
        self.lineNumbers = lineNumbers
    }

    /// The line of the value at `path`, or nil when it was not in the file.
    public func line(of path: String) -> Int? {
        lineNumbers[path]
    }
}
