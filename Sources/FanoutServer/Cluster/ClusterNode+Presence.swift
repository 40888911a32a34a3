import FanoutProtocol
import FanoutRedisEngine

/// Presence across nodes (1.3): the cluster node is the `PresenceDirectory`. Local joins and leaves go to the
/// Redis engine, which keeps every node's members on each subject's shard (`RedisEngine+Presence.swift`); WHO
/// is answered from there, a Redis round trip held in the connection's reply order; a lost node's members and
/// this node's own members written again after it was declared lost are announced through presence's normal
/// publish path (`Presence.announce`).
extension ClusterNode: PresenceDirectory {
    var nodeID: String { engine.nodeID }

    func joined(_ subject: String, member: PresenceMember, connectionID: UInt64) {
        engine.presenceJoined(subject, connection: connectionID, user: member.user, group: member.group)
    }

    func left(_ subject: String, member: PresenceMember, connectionID: UInt64) {
        engine.presenceLeft(subject, connection: connectionID)
    }

    /// `+OK <count> <member> ...` from Redis, every node's members, or `-ERR unavailable` while the subject's
    /// shard is away; commands the connection sends meanwhile wait behind it (`ReplyOrder`).
    func who(_ subject: String, limit: Int, for connection: ClientConnection) {
        let replies = host.replies
        let (pending, ticket) = replies.reserveSlot(for: connection)
        engine.presenceWho(subject, limit: limit) { [weak replies, weak pending] result in
            guard let replies, let pending, let connection = pending.connection, connection.socket != nil else {
                return
            }
            let line: String
            switch result {
            case .success(let answer):
                line = Encoder.ok(([String(answer.count)] + answer.members.map(\.text)).joined(separator: " "))
            case .failure(let failure):
                line = ProtocolError(.unavailable, failure.description).line
            }
            replies.fillReply(Array(line.utf8), ticket: ticket, pending, of: connection)
        }
    }

    /// Joins the engine's presence to the server's: this node becomes the directory, lost members and members
    /// written again are announced, and the members already held (a restarted engine) are written to Redis.
    func startPresence() {
        let presence = host.presence
        presence.directory = self
        // The server outlives the engine, which a callback may keep past its node.
        engine.onPresenceLost = { [unowned presence] subject, member in
            presence.announce(PresenceEvent(leave: member, reason: .nodeLost), on: subject)
        }
        engine.onPresenceRejoined = { [unowned presence] subject, member in
            presence.announce(PresenceEvent(join: member), on: subject)
        }
        engine.wantsPresence = { [unowned presence] in presence.isOn }
        engine.startPresence(loop: host.loop)
        // Members carried over from a previous engine (a reload that changed `cluster:`) join under this node's
        // new id: its first lease finds no record of it, so the engine writes them as fresh joins and announces
        // each (`onPresenceRejoined`), once the shard takes them; their old ids' leaves come as node-lost once the
        // old lease runs out. O(members), once per such reload.
        let now = presence.now
        for (subject, room) in presence.rooms {
            for member in room.oldestMembers(room.count) {
                let user = host.connections[member.connectionID].flatMap { host.auth.userName(of: $0) }
                engine.presenceJoined(subject, connection: member.connectionID, user: user, group: member.group,
                                      ago: .nanoseconds(max(0, now - member.joinedAt)))
            }
        }
    }

    /// The engine stops: presence is local again (members stay; a lease that runs out in Redis lets a
    /// survivor announce them lost there).
    func stopPresence() {
        engine.stopPresence()
        if host.presence.directory === self { host.presence.directory = nil }
    }
}
