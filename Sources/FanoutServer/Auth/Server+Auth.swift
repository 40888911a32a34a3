import FanoutEventLoop
import FanoutProtocol

/// What AUTH keeps across connections: per-address failure buckets, the rate-limited failure log, and the
/// number of connections still unauthenticated (capped by max_unauthenticated).
struct AuthGate {
    var throttle = AuthThrottle()
    /// Written once per interval at most; made on first use, with the loop.
    var failureLog: LogThrottle?
    /// Connections whose `permissions` are nil: on a server that requires AUTH, those that have not passed it.
    var unauthenticated = 0
}

extension Server {
    /// Closes the connection unless it authenticates within auth_timeout of connecting. Set once: failed
    /// attempts never extend it.
    func startAuthDeadline(for connection: ClientConnection) {
        let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in
            if connection.grant == nil { self.disconnect(connection, reason: .authTimeout) }
        }
        timer.schedule(after: configuration.auth.authTimeout)
        connection.madeExtras.authDeadline = timer
    }

    /// `AUTH <token>`: every user's hash is checked (no early exit), so the time taken says nothing about
    /// which user, if any, came close. A failure delays the connection's next command, and the
    /// max_auth_failures-th failure closes it. An address that fails too often has its attempts refused
    /// unchecked for a while (`AuthThrottle`), however many connections it opens.
    func authenticate(_ connection: ClientConnection, token: String) {
        guard configuration.auth.requiresAuth else {
            connection.send(Encoder.ok("auth not required"))
            return
        }
        let now = ContinuousClock.now
        if let wait = auth.gate.throttle.admit(connection.peerHost, at: now) {
            let seconds = max(1, wait.components.seconds + (wait.components.attoseconds > 0 ? 1 : 0))
            // Refused unchecked, and closed: a guesser's connections must not hold slots while it waits.
            connection.madeExtras.authFailures += 1
            logAuthFailure(connection)
            connection.send(ProtocolError(
                .denied, "too many failed AUTH attempts from \(connection.peerHost); try again in \(seconds)s").line)
            disconnect(connection, reason: .authFailures)
            return
        }
        var matched: User?
        for user in configuration.auth.users where user.tokenHash.matches(token) && matched == nil {
            matched = user
        }
        guard let matched else {
            auth.gate.throttle.recordFailure(connection.peerHost, at: now)
            failAuthentication(connection, ProtocolError(.denied, "invalid token"))
            return
        }
        if connection.grant == nil { auth.gate.unauthenticated -= 1 }
        connection.grant = sharedPermissions(of: matched)
        connection.madeExtras.userName = matched.name
        connection.extras?.lastPermittedSubject = []
        connection.extras?.authFailures = 0
        connection.extras?.authDeadline = nil
        connection.send(Encoder.ok())
        logger.info("authenticated", metadata: ["client": "\(connection.id)", "user": "\(matched.name)"])
    }

    /// Answers a failed or refused AUTH, logs it (rate-limited), and delays the connection's next command,
    /// or closes it at max_auth_failures.
    private func failAuthentication(_ connection: ClientConnection, _ error: ProtocolError) {
        let extras = connection.madeExtras
        extras.authFailures += 1
        logAuthFailure(connection)
        if extras.authFailures >= configuration.auth.maxAuthFailures {
            connection.send(ProtocolError(.denied, "too many failed AUTH attempts; closing").line)
            disconnect(connection, reason: .authFailures)
            return
        }
        connection.send(error.line)
        guard holdCommands(of: connection) else { return }
        let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in
            self.releaseCommands(of: connection)
        }
        timer.schedule(after: .milliseconds(250) * extras.authFailures)
        extras.retryDelay = timer
    }

    /// One line per failure at most every `SuppressedLog.interval`; the rest are summed up in one line then.
    private func logAuthFailure(_ connection: ClientConnection) {
        if auth.gate.failureLog == nil {
            auth.gate.failureLog = LogThrottle(loop: loop) { [unowned self] count, sources in
                self.logger.info("\(count) more failed AUTH attempts in the last \(SuppressedLog.interval)",
                                 metadata: ["from": "\(sources.joined(separator: ","))"])
            }
        }
        guard auth.gate.failureLog?.shouldWrite(from: connection.peerHost) == true else { return }
        logger.info("AUTH failed", metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)",
                                              "failures": "\(connection.extras?.authFailures ?? 0)"])
    }

    /// The error for a command this connection may not run, or nil when it may.
    func refusal(of command: Command, by connection: ClientConnection) -> ProtocolError? {
        // Without users everyone may do everything: PUB's hot path skips every check.
        guard configuration.auth.requiresAuth else { return nil }
        guard let permissions = connection.grant?.permissions else {
            switch command {
            case .auth, .ping, .help, .quit: return nil
            default: return ProtocolError(.authRequired, "AUTH <token> first")
            }
        }
        switch command {
        case .sub(let patterns):
            if let refused = patterns.first(where: { !permissions.maySubscribe($0) }) {
                return ProtocolError(.denied, "not allowed to subscribe to '\(refused)'")
            }
        case .qsub(_, let patterns):
            if let refused = patterns.first(where: { !permissions.maySubscribe($0) }) {
                return ProtocolError(.denied, "not allowed to subscribe to '\(refused)'")
            }
        case .ask(let subject, _, _, _), .bpub(let subject, _):
            let text = String(decoding: subject, as: UTF8.self)
            guard permissions.mayPublish(text) else { return ProtocolError(.denied, "not allowed to publish to '\(text)'") }
        case .resume(let subject, _), .last(let subject, _):
            if !permissions.maySubscribe(subject) {
                return ProtocolError(.denied, "not allowed to subscribe to '\(subject)'")
            }
        case .pub(let subject, _):
            guard !(connection.extras?.lastPermittedSubject ?? []).elementsEqual(subject) else { return nil }
            let text = String(decoding: subject, as: UTF8.self)
            guard permissions.mayPublish(text) else { return ProtocolError(.denied, "not allowed to publish to '\(text)'") }
            connection.madeExtras.lastPermittedSubject = Array(subject)
        default:
            break
        }
        // Not for PUB, the hot verb: no admin command is a PUB, so it skips this set lookup.
        if case .pub = command { return nil }
        if configuration.auth.adminCommands.contains(command.verb.name), !permissions.admin {
            return ProtocolError(.denied, "\(command.verb.name) needs an admin user")
        }
        return nil
    }

    /// After a reload: gives each authenticated connection its user's new permissions, dropping (and telling
    /// it about) subscriptions it may no longer hold. Turning auth on sends unauthenticated connections back
    /// to AUTH; turning it off frees everyone.
    func reapplyPermissions() {
        defer { auth.gate.unauthenticated = connections.values.reduce(0) { $0 + ($1.grant == nil ? 1 : 0) } }
        auth.permissionsByUser = [:]
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            let fresh: SharedPermissions?
            if !configuration.auth.requiresAuth {
                fresh = .unrestricted
            } else if let name = connection.extras?.userName {
                fresh = configuration.auth.users.first { $0.name == name }.map(sharedPermissions(of:)) ?? .nothing
            } else {
                fresh = nil
            }
            connection.grant = fresh
            connection.extras?.lastPermittedSubject = []
            if fresh == nil && connection.extras?.authDeadline == nil { startAuthDeadline(for: connection) }
            if fresh != nil { connection.extras?.authDeadline = nil }
            let revoked = connection.subscriptions.filter { fresh?.permissions.maySubscribe($0) != true }.sorted()
            guard !revoked.isEmpty else { continue }
            subscriptions.remove(revoked, for: connection)
            replays.sendNotice(ProtocolError.revoked(revoked).line, to: connection)
            logger.info("subscriptions revoked by reload", metadata: ["client": "\(connection.id)", "subjects": "\(revoked.joined(separator: " "))"])
        }
    }

    /// `user`'s permissions as one object that all of its connections share.
    func sharedPermissions(of user: User) -> SharedPermissions {
        if let shared = auth.permissionsByUser[user.name], shared.permissions == user.permissions { return shared }
        let shared = SharedPermissions(user.permissions)
        auth.permissionsByUser[user.name] = shared
        return shared
    }
}
