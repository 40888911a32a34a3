import FanoutProtocol

/// `KICK <client> [<reason>]` (1.3): an administrator closes a connection, or every connection of a user, telling
/// each why. The kicker hears `+OK <n>` first, so that a connection that kicks itself still learns how many went.
extension Admin {
    /// The reason a kicked connection is told when the administrator gave none.
    static let defaultKickReason = "by an administrator"

    /// Runs `KICK` for `connection`. With auth on it needs the administrator flag (a users-file `admin: true` or
    /// a token's `fanout.admin`), whatever `admin_commands` names: closing others' connections is never a verb an
    /// operator opens. With auth off every connection may, as every other command is open then.
    ///
    /// Cost: O(1) for an id; for `user=<user>`, a scan of the connection table (at most max_connections), which
    /// only an administrator can ask for.
    func kick(_ target: Command.KickTarget, reason: String?, by connection: ClientConnection) {
        if host.configuration.auth.requiresAuth, connection.permissions?.admin != true {
            return connection.send(ProtocolError(.denied, "KICK needs an administrator").line)
        }
        let kicked: [ClientConnection]
        switch target {
        case .client(let node, let id):
            if let node, node != host.cluster?.engine.nodeID {
                return connection.send(ProtocolError(
                    .syntax, "\(node)/\(id) is a client of node \(node); send KICK to a connection of that node").line)
            }
            kicked = host.connections[id].map { [$0] } ?? []
        case .user(let name):
            let auth = host.auth
            // The name as sent, or as WHO and CLIENTS list it (a space, comma, `=` or control byte written `_`).
            kicked = host.connections.values.filter { connection in
                guard let user = auth.userName(of: connection) else { return false }
                return user == name || PresenceMember.listable(user) == name
            }.sorted { $0.id < $1.id }
        }
        let told = reason ?? Self.defaultKickReason
        connection.send(Encoder.ok(String(kicked.count)))
        let kicker = host.auth.userName(of: connection) ?? "-"
        for target in kicked {
            // The log sorts its fields: the reason, which may hold spaces, comes last.
            host.logger.notice("kick", metadata: ["by": "\(connection.id)", "by_user": "\(kicker)",
                                                  "client": "\(target.id)",
                                                  "client_user": "\(host.auth.userName(of: target) ?? "-")",
                                                  "reason": "\(told)"])
            host.disconnect(target, reason: .kicked(told))
        }
    }
}
