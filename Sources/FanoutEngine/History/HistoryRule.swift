import FanoutProtocol

/// Which subjects keep history, how much and for how long. The first rule whose pattern matches a subject
/// applies to it; a subject no rule matches keeps none.
public struct HistoryRule: Sendable, Equatable, CustomStringConvertible {
    /// A subject pattern (`orders.>`, `sensors.*`).
    public var subjects: String
    /// Messages kept per subject, at least 1.
    public var maxMessages: Int
    /// How long a message is kept; nil keeps it until count or bytes push it out.
    public var maxAge: Duration?

    public init(subjects: String, maxMessages: Int, maxAge: Duration?) {
        self.subjects = subjects
        self.maxMessages = maxMessages
        self.maxAge = maxAge
    }

    /// What is wrong with the rule, or nil when it is usable.
    public var problem: String? {
        if !Subject.isValidPattern(subjects) { return "'\(subjects)' is not a valid subject pattern" }
        if maxMessages < 1 { return "\(subjects): max_messages must be at least 1" }
        if let maxAge, maxAge < .zero { return "\(subjects): max_age must not be negative" }
        return nil
    }

    public var description: String {
        let age = maxAge.map { "\($0.components.seconds)s" } ?? "no age limit"
        return "\(subjects): \(maxMessages) messages, \(age)"
    }

    /// The first of `rules` that applies to `subject`, by position.
    static func first(of rules: [HistoryRule], for subject: String) -> Int? {
        rules.firstIndex { Subject.matches(pattern: $0.subjects, subject: subject) }
    }
}
