/// What a token's claims must satisfy beside its signature: the configured `token_issuer`, `token_audience`
/// and `token_leeway`.
public struct TokenRules: Sendable, Equatable {
    /// When set, `iss` must equal it.
    public var issuer: String?
    /// When set, `aud` (a string or a list of strings) must be or contain it.
    public var audience: String?
    /// Clock skew allowed on `exp`, `nbf` and `iat`, in seconds.
    public var leewaySeconds: Int64

    public init(issuer: String? = nil, audience: String? = nil, leewaySeconds: Int64 = 5) {
        self.issuer = issuer
        self.audience = audience
        self.leewaySeconds = leewaySeconds
    }
}

/// The `fanout` claim: what the token's holder may do (patterns in the users file's language).
public struct TokenGrant: Sendable, Equatable {
    public var publish: [String]
    public var publishDeny: [String]
    public var subscribe: [String]
    public var subscribeDeny: [String]
    public var admin: Bool

    public init(publish: [String] = [], publishDeny: [String] = [], subscribe: [String] = [],
                subscribeDeny: [String] = [], admin: Bool = false)
    {
        self.publish = publish
        self.publishDeny = publishDeny
        self.subscribe = subscribe
        self.subscribeDeny = subscribeDeny
        self.admin = admin
    }

    /// Patterns in all four lists.
    public var patternCount: Int { publish.count + publishDeny.count + subscribe.count + subscribeDeny.count }
}

/// A token whose signature and claims were checked.
public struct VerifiedToken: Sendable, Equatable {
    /// `sub`: the user.
    public let subject: String
    /// `exp`, unix seconds (a fraction rounded down); nil when the token has none.
    public let expiresAt: Int64?
    /// Empty lists and admin false when the claim is absent.
    public let grant: TokenGrant

    public init(subject: String, expiresAt: Int64?, grant: TokenGrant) {
        self.subject = subject
        self.expiresAt = expiresAt
        self.grant = grant
    }
}
