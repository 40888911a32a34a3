import FanoutProtocol

/// Who may connect and what they may do.
public struct AuthSettings: Sendable, Equatable {
    /// Users allowed in; when there are any, every connection must AUTH first (the greeting says so).
    public var users: [User] = []
    /// How long a connection may stay unauthenticated before it is closed.
    public var authTimeout = Duration.seconds(10)
    /// Failed AUTH attempts after which the connection is closed; each failure first delays the next read.
    public var maxAuthFailures = 3
    /// Connections that may be waiting to authenticate at once; one more is answered `-ERR limit` and closed.
    public var maxUnauthenticated = 1000
    /// Verbs that need a user with `admin: true` (when users are configured).
    public var adminCommands: Set<String> = ["INFO", "CLIENTS"]
    /// Application tokens (JWT): their keys and the claims checked.
    public var tokens = TokenSettings() {
        didSet { tokensOn = tokens.isOn }
    }
    /// `tokens.isOn`, kept as a stored flag: `requiresAuth` is asked on every command.
    private(set) var tokensOn = false

    /// The verbs `adminCommands` may name.
    public static let restrictableVerbs = Set(
        [Command.Verb.sub, .unsub, .pub, .channels, .info, .clients].map(\.name)
    )

    public init() {}

    /// Whether connections must authenticate: there are users, or token keys.
    public var requiresAuth: Bool { !users.isEmpty || tokensOn }

    func problems() -> [String] {
        var found: [String] = tokens.problems()
        if authTimeout <= .zero { found.append("auth_timeout: must be positive") }
        if maxAuthFailures < 1 { found.append("max_auth_failures: must be at least 1") }
        if maxUnauthenticated < 1 { found.append("max_unauthenticated: must be at least 1") }
        for verb in adminCommands.sorted() where !Self.restrictableVerbs.contains(verb) {
            let known = Self.restrictableVerbs.sorted().joined(separator: ", ")
            found.append("admin_commands: \(verb) is not one of \(known)")
        }
        for user in users {
            let permissions = user.permissions
            for pattern in permissions.publish + permissions.publishDeny + permissions.subscribe
                + permissions.subscribeDeny where !Subject.isValidPattern(pattern) {
                found.append("users.\(user.name): '\(pattern)' is not a valid subject pattern")
            }
        }
        return found
    }
}
