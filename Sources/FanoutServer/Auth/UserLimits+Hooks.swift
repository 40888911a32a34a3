import FanoutProtocol
import FanoutTokens

/// Where the per-user limits meet the rest of the server: each call site is one line (`UserLimits`).
extension Authenticator {
    /// AUTH matched `user`: the connection is counted as the user's, or, when the user holds
    /// max_connections_per_user already, answered `-ERR limit ...` and closed. True when it was refused.
    func refusedOverUserLimit(_ connection: ClientConnection, user: String) -> Bool {
        let previous = sessions[connection.id]?.userName
        let settings = host.configuration.userLimits
        if let refusal = host.userLimits.admit(user, replacing: previous, settings: settings) {
            host.disconnect(connection, reason: .userLimit(refusal.text))
            return true
        }
        // A publisher that became another user takes that user's bucket from its next publish.
        if previous != user { connection.extras?.userLimit = nil }
        return false
    }

    /// A connection made from an HTTP request became `user`'s (its 429 check came before the upgrade).
    func countUserConnection(_ user: String?) {
        if let user { host.userLimits.count(user, settings: host.configuration.userLimits) }
    }

    /// A departure: its user holds one connection less.
    func userConnectionLeft(_ connection: ClientConnection) {
        host.userLimits.release(sessions[connection.id]?.userName, settings: host.configuration.userLimits)
    }

    /// An event stream's or WebSocket's request by `user`: 429 `limit` when the user holds
    /// max_connections_per_user already, checked before the response starts.
    func userConnectionRefusal(for user: String?) -> HTTPRefusal? {
        let settings = host.configuration.userLimits
        guard let user, let refusal = host.userLimits.refusesConnection(of: user, settings: settings) else {
            return nil
        }
        host.logger.info("refused at max_connections_per_user", metadata: ["user": "\(user)"])
        return HTTPRefusal(status: 429, code: "limit", refusal.text)
    }

    /// A WebSocket upgrade presenting a token (`Authorization: Bearer`, `?token=` or the subprotocol): the user
    /// it names, checked as above before the 101. Only while max_connections_per_user is set, when the token is
    /// checked once more after the upgrade (a JWT's signature too: a refused one names no user here and is
    /// answered in the stream, as an AUTH is).
    func userConnectionRefusal(presenting token: String?) -> HTTPRefusal? {
        guard settings.requiresAuth, host.configuration.userLimits.maxConnectionsPerUser != nil, let token else {
            return nil
        }
        if let verifier, TokenVerifier.looksLikeJWT(token) {
            guard case .success(let verified) = verifier.verify(token, now: Self.unixNow()) else { return nil }
            return userConnectionRefusal(for: verified.subject)
        }
        return userConnectionRefusal(for: user(holding: token)?.name)
    }

    /// An HTTP publish by the `granted` user: 429 `limit` over user_publish_rate. One its permissions refuse
    /// takes no token (it is answered 403 as the dispatcher refuses it), as a refused PUB takes none. The
    /// request's own connection has no session, so its PUB is not counted a second time by the dispatcher.
    func userPublishRefusal(for granted: HTTPGrant, to subject: String) -> HTTPRefusal? {
        let settings = host.configuration.userLimits
        guard settings.publishRate != nil, let user = granted.user,
              granted.grant.permissions.mayPublish(subject) else { return nil }
        let limits = host.userLimits
        guard let refusal = limits.takePublish(limits.entry(of: user, settings: settings), settings: settings) else {
            return nil
        }
        return HTTPRefusal(status: 429, code: "limit", refusal.text)
    }
}

extension Server {
    /// A PUB under user_publish_rate (the dispatcher asks only while one is set): over the user's rate it is
    /// answered `-ERR limit ...` and not published. True when it was refused. Never inlined: the dispatcher's
    /// PUB path keeps only the branch that asks.
    @inline(never)
    func refusedOverUserRate(_ connection: ClientConnection) -> Bool {
        guard let refusal = userPublishRefusal(of: connection) else { return false }
        fanout.close()
        replies.reply(refusal.line, to: connection)
        return true
    }

    /// The refusal of one more publish by `connection`'s user, or nil when it may go (or it has no user). The
    /// user's entry is kept in the connection's extras from its first publish, so that the next ones find it
    /// without hashing the name.
    @inline(never)
    func userPublishRefusal(of connection: ClientConnection) -> ProtocolError? {
        let settings = configuration.userLimits
        if let entry = connection.extras?.userLimit {
            return userLimits.takePublish(entry, settings: settings)
        }
        guard let user = auth.userName(of: connection) else { return nil }
        let entry = userLimits.entry(of: user, settings: settings)
        connection.madeExtras.userLimit = entry
        return userLimits.takePublish(entry, settings: settings)
    }
}
