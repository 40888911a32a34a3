import FanoutEngine
import FanoutServer

/// The `history:` list of the configuration file:
///
///     history:                      # first rule whose pattern matches a subject wins; none = no history
///       - subjects: "orders.>"
///         max_messages: 1000
///         max_age: 3600             # seconds; 0 = no age limit
///
/// A rule's numbers are checked by `HistoryRule.problem` with the rest of the configuration.
enum HistorySection {
    static func read(_ section: YAMLNode?) throws -> [HistoryRule] {
        guard let section, section != .null else { return [] }
        guard case .sequence(let items) = section else {
            throw ConfigLoader.Problem(description: "history: expected a list of rules (- subjects: ...)")
        }
        return try items.enumerated().map { index, item in try rule(index, item) }
    }

    private static func rule(_ index: Int, _ item: YAMLNode) throws -> HistoryRule {
        func problem(_ text: String) -> ConfigLoader.Problem {
            ConfigLoader.Problem(description: "history[\(index)]: \(text)")
        }
        guard case .mapping(let fields) = item else { throw problem("expected subjects, max_messages and max_age") }
        for key in fields.keys where !["subjects", "max_messages", "max_age"].contains(key) {
            throw problem("unknown setting '\(key)'")
        }
        guard case .scalar(let subjects)? = fields["subjects"] else { throw problem("subjects: expected a pattern") }
        guard case .scalar(let countText)? = fields["max_messages"], let count = Int(countText) else {
            throw problem("max_messages: expected a whole number")
        }
        var maxAge: Duration?
        switch fields["max_age"] {
        case nil, .null?:
            break
        case .scalar(let text)?:
            guard let seconds = Double(text), seconds.isFinite else { throw problem("max_age: expected seconds") }
            if seconds != 0 { maxAge = .milliseconds(Int64((seconds * 1000).rounded())) }
        default:
            throw problem("max_age: expected seconds")
        }
        return HistoryRule(subjects: subjects, maxMessages: count, maxAge: maxAge)
    }
}
