/// INFO's `name=value` fields: each part of the server gives its own as a list (the admin's, the cluster's,
/// the history disk's), and the reply joins them in that order.
enum InfoFields {
    typealias Field = (name: String, value: any CustomStringConvertible)

    /// `name=value name=value ...`
    static func text(_ fields: [Field]) -> String {
        fields.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
    }

    /// Fields given as text, as a list of `Field`.
    static func fields(_ pairs: [(String, String)]) -> [Field] {
        pairs.map { ($0.0, $0.1) }
    }
}
