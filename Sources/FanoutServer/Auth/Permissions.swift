import FanoutProtocol

/// What one user may do: subject patterns allowed and denied for publishing and subscribing.
///
/// - PUB to a subject needs a matching `publish` pattern and no matching `publishDeny` pattern.
/// - SUB to a pattern needs a `subscribe` pattern that covers it (every subject it can match), and is refused
///   when a `subscribeDeny` pattern covers it whole.
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

    public func maySubscribe(_ pattern: String) -> Bool {
        subscribe.contains { Self.covers($0, pattern) } && !subscribeDeny.contains { Self.covers($0, pattern) }
    }

    /// Whether a message on `subject` must be withheld from this user.
    public func withholds(_ subject: String) -> Bool {
        subscribeDeny.contains { Subject.matches(pattern: $0, subject: subject) }
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
