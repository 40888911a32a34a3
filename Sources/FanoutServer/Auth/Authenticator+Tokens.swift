#if canImport(Glibc)
import Glibc
#endif
import FanoutEventLoop
import FanoutProtocol
import FanoutTokens
import Logging

/// Application tokens (JWT): `AUTH <jwt>`, HTTP requests' tokens, a token connection's expiry with its push
/// and grace, and a refresh on the same connection.
///
/// Cost: a token is verified only in AUTH or an HTTP request (at most `TokenVerifier.maxTokenBytes` and
/// `maxPatterns`, refused before any signature work beyond them); a token connection costs a `TokenSession`,
/// its timer and its own `SharedPermissions` (tokens carry their grant, so connections do not share one). A
/// server without token keys runs none of this.
extension Authenticator {
    /// The verifier for `tokens`' keys, or nil when none is configured. The keys were checked with the rest of
    /// the configuration (`TokenSettings.problems`); one that fails here all the same leaves tokens refused.
    static func verifier(for tokens: TokenSettings) -> TokenVerifier? {
        guard tokens.isOn, let keys = try? tokens.keys() else { return nil }
        return TokenVerifier(keys: keys, rules: TokenRules(issuer: tokens.issuer, audience: tokens.audience,
                                                           leewaySeconds: tokens.leewaySeconds))
    }

    /// Now in unix seconds, for `exp` and `nbf`: the kernel's coarse clock, read through the vDSO without a
    /// system call, and only when a token is checked or its expiry scheduled.
    static func unixNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return Int64(now.tv_sec)
    }

    /// `AUTH <jwt>`: a valid token authenticates the connection as its `sub` with its grant, or refreshes a
    /// connection already authenticated as that user (its subscriptions stay, those the new grant does not
    /// allow are dropped with the revoked notice). A token for another user is refused and the session kept.
    /// A bad token is a failed AUTH like any other; its reason goes to the log only.
    func authenticate(_ connection: ClientConnection, jwt: String, with verifier: TokenVerifier,
                      at now: ContinuousClock.Instant) {
        let verified: VerifiedToken
        switch verifier.verify(jwt, now: Self.unixNow()) {
        case .failure(let rejection):
            host.stats.tokenFailures += 1
            throttle.recordFailure(connection.peerHost, at: now)
            fail(connection, ProtocolError(.denied, "invalid token"), reason: rejection.reason)
            return
        case .success(let token):
            verified = token
        }
        let current = connection.grant == nil ? nil : sessions[connection.id]?.userName
        if let current, current != verified.subject {
            connection.send(ProtocolError(.denied, "token is for another user").line)
            host.logger.info("AUTH refused: token is for another user",
                             metadata: ["client": "\(connection.id)", "user": "\(current)"])
            return
        }
        if refusedOverUserLimit(connection, user: verified.subject) { return }
        let refreshed = current != nil && tokenSessions[connection.id] != nil
        let grant = admit(connection, token: verified)
        sessions[connection.id]?.failures = 0
        connection.send(Encoder.ok())
        if refreshed {
            host.stats.tokenRefreshes += 1
            dropDisallowedSubscriptions(of: connection, under: grant, why: "token refresh")
        }
        host.logger.info(refreshed ? "token refreshed" : "authenticated",
                         metadata: ["client": "\(connection.id)", "user": "\(verified.subject)"])
    }

    /// Authenticates `connection` as `token`'s user with its grant, and schedules its expiry.
    @discardableResult
    func admit(_ connection: ClientConnection, token: VerifiedToken) -> SharedPermissions {
        let grant = SharedPermissions(Permissions(token.grant))
        if connection.grant == nil { unauthenticated -= 1 }
        connection.grant = grant
        connection.extras?.lastPermittedSubject = []
        sessions[connection.id, default: Session()].userName = token.subject
        sessions[connection.id]?.deadline = nil
        let withholds = !grant.permissions.subscribeDeny.isEmpty
        let session: TokenSession
        if let existing = tokenSessions[connection.id] {
            session = existing
            withholdingTokenConnections += (withholds ? 1 : 0) - (existing.withholds ? 1 : 0)
            session.withholds = withholds
        } else {
            session = TokenSession(withholds: withholds)
            tokenSessions[connection.id] = session
            if withholds { withholdingTokenConnections += 1 }
        }
        session.inGrace = false
        session.timer = nil
        session.expiresAt = token.expiresAt
        if let expiresAt = token.expiresAt {
            let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in self.tokenExpired(connection) }
            timer.schedule(after: .seconds(TokenSession.wait(until: expiresAt, from: Self.unixNow())))
            session.timer = timer
        }
        return grant
    }

    /// The token of `connection` expired: it is told, and closed unless a fresh AUTH comes within
    /// token_expiry_grace. Its commands keep working meanwhile.
    private func tokenExpired(_ connection: ClientConnection) {
        guard let session = tokenSessions[connection.id], !session.inGrace else {
            return host.disconnect(connection, reason: .authExpired)
        }
        if let expiresAt = session.expiresAt, Self.unixNow() < expiresAt {
            // A far expiry, reached in steps (`TokenSession.longestWait`).
            session.timer?.schedule(after: .seconds(TokenSession.wait(until: expiresAt, from: Self.unixNow())))
            return
        }
        host.stats.tokensExpired += 1
        session.inGrace = true
        let grace = settings.tokens.expiryGrace
        host.replays.sendNotice(ProtocolError(.authExpired, "token expired; send AUTH with a fresh token within "
            + "\(Self.secondsText(grace))s").line, to: connection)
        host.logger.info("token expired", metadata: ["client": "\(connection.id)",
                                                      "user": "\(sessions[connection.id]?.userName ?? "")"])
        guard grace > .zero else { return host.disconnect(connection, reason: .authExpired) }
        session.timer?.schedule(after: grace)
    }

    /// A departure's token session goes, with its timer.
    func tokenSessionEnded(_ connection: ClientConnection) {
        guard let session = tokenSessions.removeValue(forKey: connection.id) else { return }
        if session.withholds { withholdingTokenConnections -= 1 }
    }

    /// Drops the subscriptions `grant` no longer allows, telling the connection with the revoked notice.
    func dropDisallowedSubscriptions(of connection: ClientConnection, under grant: SharedPermissions?, why: String) {
        let revoked = connection.subscriptions.filter { grant?.permissions.maySubscribe($0) != true }.sorted()
        guard !revoked.isEmpty else { return }
        host.subscriptions.remove(revoked, for: connection)
        host.replays.sendNotice(ProtocolError.revoked(revoked).line, to: connection)
        host.logger.info("subscriptions revoked by \(why)",
                         metadata: ["client": "\(connection.id)", "subjects": "\(revoked.joined(separator: " "))"])
    }

    /// "30", or "0.5" for a fraction.
    static func secondsText(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        return fraction == 0 ? "\(whole)" : String(Double(whole) + Double(fraction) / 1e18)
    }
}

extension Permissions {
    /// A token's grant (its `fanout` claim) as permissions; a token without the claim grants nothing.
    init(_ grant: TokenGrant) {
        self.init(publish: grant.publish, publishDeny: grant.publishDeny, subscribe: grant.subscribe,
                  subscribeDeny: grant.subscribeDeny, admin: grant.admin)
    }
}

extension TokenSettings {
    /// The configured keys, parsed.
    func keys() throws(TokenKeyProblem) -> TokenKeys {
        try TokenKeys(hmacSecret: secret, publicKeyPEM: publicKeyPEM, jwks: jwks)
    }

    /// The settings a key problem is about, as `problems()` names them ("token_secret_file/token_jwks_file").
    var keySettingNames: String {
        [("token_secret_file", secret), ("token_public_key_file", publicKeyPEM), ("token_jwks_file", jwks)]
            .filter { $0.1 != nil }.map(\.0).joined(separator: "/")
    }
}
