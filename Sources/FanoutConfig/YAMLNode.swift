/// A value in a configuration file. Scalars stay text: each setting converts its own (`max_line` to a whole
/// number, `write_timeout` to seconds), so a quoted and an unquoted number read the same.
public indirect enum YAMLNode: Equatable, Sendable {
    case null
    case scalar(String)
    case sequence([YAMLNode])
    case mapping([String: YAMLNode])

    /// What a reader found, for "expected ..., found ..." messages: the text itself, or the kind of value.
    public var foundDescription: String {
        switch self {
        case .null: return "nothing"
        case .scalar(let text): return "'\(text)'"
        case .sequence: return "a list"
        case .mapping: return "a 'key: value' map"
        }
    }
}
