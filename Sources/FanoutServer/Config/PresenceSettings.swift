import FanoutProtocol

/// Which subjects keep presence (protocol 1.3's `WHO`, and joins and leaves on `$presence.<subject>`).
public struct PresenceSettings: Sendable, Equatable {
    /// Subject patterns: a concrete subject one of them matches keeps presence. Empty (the default) keeps none.
    public var patterns: [String] = []

    /// More patterns would make each first SUB of a subject compare against too many.
    public static let maxPatterns = 1000

    public init() {}

    func problems() -> [String] {
        var found = patterns.filter { !Subject.isValidPattern($0) }.map {
            "presence: '\($0)' is not a valid subject pattern"
        }
        if patterns.count > Self.maxPatterns {
            found.append("presence: \(patterns.count) patterns, at most \(Self.maxPatterns)")
        }
        return found
    }
}
