import FanoutHTTP

extension Server {
    /// Who an HTTP request's token (Bearer, or `?token=` for EventSource) belongs to, checked as AUTH
    /// checks: every user's hash is tried, and an address that fails too often is refused unchecked for a
    /// while. Returns the grant, or the HTTP refusal: 401 with `auth-required` or `denied`.
    func httpGrant(token: String?, peerHost: String) -> Result<(grant: SharedPermissions, user: String?), HTTPRefusal> {
        guard configuration.auth.requiresAuth else { return .success((.unrestricted, nil)) }
        guard let token else {
            return .failure(HTTPRefusal(status: 401, code: "auth-required", "send Authorization: Bearer <token>"))
        }
        let now = ContinuousClock.now
        if auth.gate.throttle.admit(peerHost, at: now) != nil {
            return .failure(HTTPRefusal(status: 401, code: "denied", "too many failed attempts from \(peerHost); try again later"))
        }
        var matched: User?
        for user in configuration.auth.users where user.tokenHash.matches(token) && matched == nil {
            matched = user
        }
        guard let matched else {
            auth.gate.throttle.recordFailure(peerHost, at: now)
            return .failure(HTTPRefusal(status: 401, code: "denied", "invalid token"))
        }
        return .success((sharedPermissions(of: matched), matched.name))
    }

    /// Marks a connection made from an HTTP request as authenticated by the request's token.
    func admitAuthenticated(_ connection: ClientConnection, grant: SharedPermissions, user: String?) {
        guard configuration.auth.requiresAuth, connection.grant == nil else { return }
        auth.gate.unauthenticated -= 1
        connection.grant = grant
        connection.madeExtras.userName = user
        connection.extras?.authDeadline = nil
    }

    /// The HTTP status for a protocol error code, for answers that carry the code in a JSON body.
    static func httpStatus(for code: String) -> Int {
        switch code {
        case "auth-required": 401
        case "denied": 403
        case "too-long": 413
        case "limit", "shutting-down", "slow-consumer", "unavailable": 503
        default: 400
        }
    }
}

/// An HTTP request refused with a status and the protocol's error code.
struct HTTPRefusal: Error {
    let status: Int
    let code: String
    let message: String

    init(status: Int, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    var response: HTTPResponse {
        .json(status: status, Server.errorJSON(code: code, message),
              headers: status == 401 ? [("WWW-Authenticate", "Bearer")] : [])
    }
}
