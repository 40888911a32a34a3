extension Authenticator {
    /// Who an HTTP request's token (Bearer, or `?token=` for EventSource) belongs to, checked as AUTH
    /// checks: every user's hash is tried, and an address that fails too often is refused unchecked for a
    /// while. Returns the grant, or the HTTP refusal: 401 with `auth-required` or `denied`.
    func httpGrant(token: String?, peerHost: String) -> Result<(grant: SharedPermissions, user: String?), HTTPRefusal> {
        guard settings.requiresAuth else { return .success((.unrestricted, nil)) }
        guard let token else {
            return .failure(HTTPRefusal(status: 401, code: "auth-required", "send Authorization: Bearer <token>"))
        }
        let now = ContinuousClock.now
        if throttle.admit(peerHost, at: now) != nil {
            return .failure(HTTPRefusal(status: 401, code: "denied", "too many failed attempts from \(peerHost); try again later"))
        }
        guard let matched = user(holding: token) else {
            throttle.recordFailure(peerHost, at: now)
            return .failure(HTTPRefusal(status: 401, code: "denied", "invalid token"))
        }
        return .success((sharedPermissions(of: matched), matched.name))
    }

    /// Marks a connection made from an HTTP request as authenticated by the request's token.
    func admitAuthenticated(_ connection: ClientConnection, grant: SharedPermissions, user: String?) {
        guard settings.requiresAuth, connection.grant == nil else { return }
        unauthenticated -= 1
        connection.grant = grant
        sessions[connection.id, default: Session()].userName = user
        countUserConnection(user)
        sessions[connection.id]?.deadline = nil
    }
}
