import FanoutEngine
import FanoutServer
import Foundation
import Yams

/// The `history:` list of the configuration file, decoded with Yams (swift-configuration reads scalars and
/// lists of scalars, not lists of records):
///
///     history:                      # first rule whose pattern matches a subject wins; none = no history
///       - subjects: "orders.>"
///         max_messages: 1000
///         max_age: 3600             # seconds; 0 = no age limit
struct HistorySection: Decodable {
    struct Rule: Decodable {
        var subjects: String
        var max_messages: Int
        var max_age: Double?
    }

    var history: [Rule]?

    static func load(path: String) throws -> [HistoryRule] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let section: HistorySection
        do {
            section = try YAMLDecoder().decode(HistorySection.self, from: text)
        } catch {
            throw ConfigLoader.Problem(description: "history: \(error)")
        }
        return try (section.history ?? []).map { rule in
            guard let age = rule.max_age else {
                return HistoryRule(subjects: rule.subjects, maxMessages: rule.max_messages, maxAge: nil)
            }
            guard age.isFinite else { throw ConfigLoader.Problem(description: "history: \(rule.subjects): max_age") }
            let maxAge: Duration? = age == 0 ? nil : .milliseconds(Int64((age * 1000).rounded()))
            return HistoryRule(subjects: rule.subjects, maxMessages: rule.max_messages, maxAge: maxAge)
        }
    }
}
