import FanoutTokens

extension Authenticator {
    /// What an HTTP request's token grants: the permissions, the user, and for an application token the token
    /// itself (its expiry applies to a stream made from the request).
    struct HTTPGrant {
        let grant: SharedPermissions
        let user: String?
        let token: VerifiedToken?
    }

    /// Who an HTTP request's token (Bearer, or `?token=` for EventSource) belongs to, checked as AUTH
    /// checks: an application token (JWT) by the verifier when token keys are configured, else every user's
    /// hash is tried, and an address that fails too often is refused unchecked for a while. Returns the grant,
    /// or the HTTP refusal: 401 with `auth-required` or `denied`.
    func httpGrant(token: String?, peerHost: String, requestID: UInt64 = 0) -> Result<HTTPGrant, HTTPRefusal> {
        guard settings.requiresAuth else { return .success(HTTPGrant(grant: .unrestricted, user: nil, token: nil)) }
        guard let token else {
            return .failure(HTTPRefusal(status: 401, code: "auth-required", "send Authorization: Bearer <token>"))
        }
        let now = ContinuousClock.now
        if throttle.admit(peerHost, at: now) != nil {
            return .failure(HTTPRefusal(status: 401, code: "denied",
                                        "too many failed attempts from \(peerHost); try again later"))
        }
        if let verifier, TokenVerifier.looksLikeJWT(token) {
            switch verifier.verify(token, now: Self.unixNow()) {
            case .failure(let rejection):
                host.stats.tokenFailures += 1
                throttle.recordFailure(peerHost, at: now)
                logFailure(from: peerHost, peer: peerHost, client: "\(requestID)", reason: rejection.reason,
                           failures: 1)
                return .failure(HTTPRefusal(status: 401, code: "denied", "invalid token"))
            case .success(let verified):
                return .success(HTTPGrant(grant: SharedPermissions(Permissions(verified.grant)), user: verified.subject,
                                          token: verified))
            }
        }
        guard let matched = user(holding: token) else {
            throttle.recordFailure(peerHost, at: now)
            return .failure(HTTPRefusal(status: 401, code: "denied", "invalid token"))
        }
        return .success(HTTPGrant(grant: sharedPermissions(of: matched), user: matched.name, token: nil))
    }

    /// Marks a connection made from an HTTP request as authenticated by the request's token; an application
    /// token's expiry applies to it as to an AUTH.
    func admitAuthenticated(_ connection: ClientConnection, _ granted: HTTPGrant) {
        guard settings.requiresAuth, connection.grant == nil else { return }
        if let token = granted.token {
            admit(connection, token: token)
            countUserConnection(granted.user)
            return
        }
        unauthenticated -= 1
        connection.grant = granted.grant
        sessions[connection.id, default: Session()].userName = granted.user
        countUserConnection(granted.user)
        sessions[connection.id]?.deadline = nil
    }
}
