import FanoutConfig
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
    static func read(_ section: YAMLNode?, in document: YAMLDocument) throws -> [HistoryRule] {
        guard let section, section != .null else { return [] }
        guard case .sequence(let items) = section else {
            throw ConfigProblem(line: document.line(of: "history"),
                                "history: expected a list of rules (- subjects: ...), found \(section.foundDescription)")
        }
        return try items.enumerated().map { index, item in try rule(index, item, document) }
    }

    private static func rule(_ index: Int, _ item: YAMLNode, _ document: YAMLDocument) throws -> HistoryRule {
        let path = "history[\(index)]"
        func problem(_ field: String?, expected: String, found: YAMLNode?) -> ConfigProblem {
            let fieldPath = field.map { path + "." + $0 } ?? path
            let line = document.line(of: fieldPath) ?? document.line(of: path)
            return ConfigProblem(line: line, "\(fieldPath): expected \(expected), found \(found?.foundDescription ?? "nothing")")
        }
        guard case .mapping(let fields) = item else {
            throw problem(nil, expected: "a rule with subjects, max_messages and max_age", found: item)
        }
        try SettingNames.checkSection(fields, path: path, known: Setting.historyRuleKeys, in: document)
        guard case .scalar(let subjects)? = fields["subjects"] else {
            throw problem("subjects", expected: "one subject pattern in quotes, such as \"orders.>\" (one rule per pattern)",
                          found: fields["subjects"])
        }
        guard case .scalar(let countText)? = fields["max_messages"], let count = Int(countText) else {
            throw problem("max_messages", expected: "a whole number", found: fields["max_messages"])
        }
        var maxAge: Duration?
        switch fields["max_age"] {
        case nil, .null?:
            break
        case .scalar(let text)?:
            guard let seconds = Double(text), seconds.isFinite else {
                throw problem("max_age", expected: "a number of seconds", found: fields["max_age"])
            }
            if seconds != 0 { maxAge = .milliseconds(Int64((seconds * 1000).rounded())) }
        default:
            throw problem("max_age", expected: "a number of seconds", found: fields["max_age"])
        }
        return HistoryRule(subjects: subjects, maxMessages: count, maxAge: maxAge)
    }
}
