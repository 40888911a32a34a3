import FanoutProtocol

/// `WHO <subject> [<limit>]`: `+OK <count> <member> ...`, oldest member first.
extension Presence {
    /// Answers `WHO` for `connection`: it needs subscribe rights on the subject (auth on), and the subject must
    /// keep presence. On several nodes the directory answers (every node's members); standalone, the local
    /// table does. Cost: O(listed), at most 1,000 (the parser's clamp).
    func who(_ subject: String, limit: Int, for connection: ClientConnection) {
        if host.configuration.auth.requiresAuth, connection.permissions?.maySubscribe(subject) != true {
            return connection.send(ProtocolError(.denied, "not allowed to subscribe to '\(subject)'").line)
        }
        guard keepsPresence(subject) else {
            return connection.send(ProtocolError(.syntax, "no presence kept for \(subject)").line)
        }
        if let directory { return directory.who(subject, limit: limit, for: connection) }
        connection.send(Encoder.ok(localMembers(of: subject, limit: limit)))
    }

    /// `<count> <member> ...` of this node's members of `subject`, at most `limit` listed.
    func localMembers(of subject: String, limit: Int) -> String {
        guard let room = rooms[subject] else { return "0" }
        let time = now
        var words = [String(room.count)]
        for member in room.oldestMembers(limit) {
            let user = host.connections[member.connectionID].flatMap { host.auth.userName(of: $0) }
            let seconds = UInt64(max(0, time - member.joinedAt) / 1_000_000_000)
            words.append(PresenceMember(client: client(member.connectionID), user: user, sinceSeconds: seconds,
                                        group: member.group).text)
        }
        return words.joined(separator: " ")
    }
}
