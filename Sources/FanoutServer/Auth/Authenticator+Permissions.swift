import FanoutProtocol

extension Authenticator {
    /// The error for a command this connection may not run, or nil when it may.
    func refusal(of command: Command, by connection: ClientConnection) -> ProtocolError? {
        // Without users everyone may do everything (the dispatcher does not even ask for PUB and BPUB).
        guard settings.requiresAuth else { return nil }
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
            // The last permitted subject stays in the connection's extras: it is read on every PUB, where a
            // lookup here by the connection's id would cost a hash per publish.
            guard !(connection.extras?.lastPermittedSubject ?? []).elementsEqual(subject) else { return nil }
            let text = String(decoding: subject, as: UTF8.self)
            guard permissions.mayPublish(text) else { return ProtocolError(.denied, "not allowed to publish to '\(text)'") }
            connection.madeExtras.lastPermittedSubject = Array(subject)
        default:
            break
        }
        // Not for PUB, the hot verb: no admin command is a PUB, so it skips this set lookup.
        if case .pub = command { return nil }
        if settings.adminCommands.contains(command.verb.name), !permissions.admin {
            return ProtocolError(.denied, "\(command.verb.name) needs an admin user")
        }
        return nil
    }

    /// After a reload: gives each authenticated connection its user's new permissions, dropping (and telling
    /// it about) subscriptions it may no longer hold. Turning auth on sends unauthenticated connections back
    /// to AUTH; turning it off frees everyone. A token connection keeps its token's grant while token keys
    /// are configured; once they are not, it is a connection of the users-file user of its name, if any.
    func reapplyPermissions() {
        defer { unauthenticated = host.connections.values.reduce(0) { $0 + ($1.grant == nil ? 1 : 0) } }
        permissionsByUser = [:]
        if !settings.tokens.isOn {
            tokenSessions.removeAll()
            withholdingTokenConnections = 0
        }
        for connection in host.connections.values.sorted(by: { $0.id < $1.id }) {
            let fresh: SharedPermissions?
            if !settings.requiresAuth {
                fresh = .unrestricted
            } else if tokenSessions[connection.id] != nil {
                fresh = connection.grant
            } else if let name = sessions[connection.id]?.userName {
                fresh = settings.users.first { $0.name == name }.map(sharedPermissions(of:)) ?? .nothing
            } else {
                fresh = nil
            }
            connection.grant = fresh
            connection.extras?.lastPermittedSubject = []
            if fresh == nil && sessions[connection.id]?.deadline == nil { startDeadline(for: connection) }
            if fresh != nil { sessions[connection.id]?.deadline = nil }
            dropDisallowedSubscriptions(of: connection, under: fresh, why: "reload")
        }
    }

    /// `user`'s permissions as one object that all of its connections share.
    func sharedPermissions(of user: User) -> SharedPermissions {
        if let shared = permissionsByUser[user.name], shared.permissions == user.permissions { return shared }
        let shared = SharedPermissions(user.permissions)
        permissionsByUser[user.name] = shared
        return shared
    }
}
