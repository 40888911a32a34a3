import FanoutProtocol

/// What one user may do: subject patterns allowed and denied for publishing and subscribing.
///
/// - PUB to a subject needs a matching `publish` pattern and no matching `publishDeny` pattern.
/// - SUB to a pattern needs a `subscribe` pattern that covers it (every subject it can match), and is refused
///   when a `subscribeDeny` pattern covers it whole; SUB to `$presence.<rest>` needs the same rights on `<rest>`.
/// - A permitted wildcard subscription that overlaps a denied subject never delivers from it: messages whose
///   subject matches `subscribeDeny` are filtered out when the receivers are collected.
public struct Permissions: Sendable, Equatable {
    public var publish: [String]
    public var publishDeny: [String]
    public var subscribe: [String]
    public var subscribeDeny: [String]
    /// May use the admin commands (INFO and CLIENTS by default).
    public var admin: Bool

    public init(publish: [String] = [], publishDeny: [String] = [], subscribe: [String] = [],
                subscribeDeny: [String] = [], admin: Bool = false) {
        self.publish = publish
        self.publishDeny = publishDeny
        self.subscribe = subscribe
        self.subscribeDeny = subscribeDeny
        self.admin = admin
    }

    /// Everything allowed: the connection of a server without users.
    public static let unrestricted = Permissions(publish: [">"], subscribe: [">"], admin: true)

    public func mayPublish(_ subject: String) -> Bool {
        publish.contains { Subject.matches(pattern: $0, subject: subject) }
            && !publishDeny.contains { Subject.matches(pattern: $0, subject: subject) }
    }

    /// A `$presence.<rest>` pattern (1.3) is checked as `<rest>`: who is in a subject is for those who may read
    /// it (`$presence.>` needs rights on `>`). A pattern that reaches presence subjects only through a leading
    /// wildcard (`>`, `*.chat.x`) is checked as written.
    public func maySubscribe(_ pattern: String) -> Bool {
        let checked = PresenceText.memberSubject(of: pattern) ?? pattern
        return subscribe.contains { Self.covers($0, checked) } && !subscribeDeny.contains { Self.covers($0, checked) }
    }

    /// Whether a message on `subject` must be withheld from this user. A join or leave on `$presence.<rest>`
    /// is withheld when `<rest>` is: who is in a denied subject is not for a wildcard subscriber to read. Only a
    /// subject starting with `$` costs the second look.
    public func withholds(_ subject: String) -> Bool {
        subscribeDeny.contains { Subject.matches(pattern: $0, subject: subject) }
            || (subject.utf8.first == UInt8(ascii: "$") && PresenceText.memberSubject(of: subject).map {
                rest in subscribeDeny.contains { Subject.matches(pattern: $0, subject: rest) }
            } == true)
    }

    /// Whether every subject `inner` can match is matched by `outer` (both valid patterns).
    public static func covers(_ outer: String, _ inner: String) -> Bool {
        let outerTokens = outer.split(separator: ".", omittingEmptySubsequences: false)
        let innerTokens = inner.split(separator: ".", omittingEmptySubsequences: false)
        for (index, token) in outerTokens.enumerated() {
            if token == ">" { return innerTokens.count > index }
            guard index < innerTokens.count else { return false }
            let other = innerTokens[index]
            if other == ">" { return false }
            if token == "*" { continue }
            if other == "*" || other != token { return false }
        }
        return outerTokens.count == innerTokens.count
    }
}

/// A configured user: a name for logs, the token hash that authenticates it, and its permissions.
public struct User: Sendable, Equatable {
    public var name: String
    public var tokenHash: TokenHash
    public var permissions: Permissions

    public init(name: String, tokenHash: TokenHash, permissions: Permissions) {
        self.name = name
        self.tokenHash = tokenHash
        self.permissions = permissions
    }
}
