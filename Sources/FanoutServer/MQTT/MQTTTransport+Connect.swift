import FanoutMQTT
import FanoutProtocol

/// CONNECT (section 3.1): the client's identifier, its credentials checked as `AUTH` checks a token, its
/// keep-alive, its will, and the session it finds (MQTT-3.1.2-4).
extension MQTTTransport {
    /// The user name any token may come with: MQTT's tools send a user name with every password
    /// (MQTT-3.1.2-22), and an application's token names its user itself.
    static let anyUserName = "token"

    func accept(_ connect: MQTTConnect, of connection: ClientConnection) {
        let server = connection.server
        self.connect = connect
        keepAliveSeconds = connect.keepAlive
        cleanSession = connect.cleanSession
        // An empty identifier comes with clean session 1 (the decoder refused it otherwise, MQTT-3.1.3-8): the
        // server names it, as MQTT-3.1.3-6 allows.
        clientID = connect.clientID.isEmpty ? "auto-\(connection.id)" : connect.clientID
        if let given = connect.will {
            do {
                will = (given, try MQTTTopicMapping.subject(forTopic: given.topic))
            } catch {
                return end(connection, .mqttProtocol("the will's topic: \(error)"))
            }
        }
        keepAlive(connect.keepAlive, of: connection)
        guard server.configuration.auth.requiresAuth else { return connected(connection) }
        // The password is the token; a connection without one cannot be anybody (0x05, not authorized).
        guard let password = connect.password, !password.isEmpty else {
            return refuseConnect(.notAuthorized, "CONNECT without a password on a server that requires auth",
                                 of: connection)
        }
        guard password.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return refuseConnect(.badUsernameOrPassword, "the password is not a token", of: connection)
        }
        phase = .authenticating
        execute(Array("AUTH ".utf8) + password, owing: .auth, of: connection)
    }

    /// Keep-alive k > 0: the connection closes after 1.5 k without a packet (MQTT-3.1.2-24); 0 leaves
    /// idle_timeout. Until CONNECT, the read timeout is auth_timeout (`Server.admit`).
    private func keepAlive(_ seconds: UInt16, of connection: ClientConnection) {
        let configuration = connection.server.configuration
        let read: Duration? = seconds > 0 ? .milliseconds(Int(seconds) * 1_500) : configuration.timeouts.idleTimeout
        connection.socket?.setTimeouts(read: read, write: configuration.timeouts.writeTimeout)
    }

    /// CONNECT's AUTH was answered.
    func authenticated(_ reply: UnsafeRawBufferPointer, of connection: ClientConnection) {
        guard reply.first == UInt8(ascii: "+") else {
            let text = String(decoding: reply, as: UTF8.self)
            // max_connections_per_user: the service is there, but not for one more of this user's connections.
            let code: MQTTConnectReturnCode = text.hasPrefix("-ERR limit") ? .serverUnavailable : .badUsernameOrPassword
            return refuseConnect(code, text, of: connection)
        }
        let server = connection.server
        if let given = connect?.username, given != Self.anyUserName, given != server.auth.userName(of: connection) {
            return refuseConnect(.badUsernameOrPassword, "the user name is not the token's user", of: connection)
        }
        if let will, connection.permissions?.mayPublish(will.subject) == false {
            return refuseConnect(.notAuthorized, "the will's topic may not be published to", of: connection)
        }
        connected(connection)
    }

    private func refuseConnect(_ code: MQTTConnectReturnCode, _ reason: String, of connection: ClientConnection) {
        will = nil
        sendConnack(code, to: connection)
        end(connection, .mqttProtocol("CONNECT refused (\(code.rawValue)): \(reason)"))
    }

    /// CONNACK 0, with the session the client finds: its subscriptions taken again, its unacknowledged
    /// messages sent again with DUP (MQTT-4.4.0-1), then what arrived while it was away.
    private func connected(_ connection: ClientConnection) {
        let server = connection.server
        phase = .connected
        let kept = server.mqttSessions.open(clientID: clientID, cleanSession: cleanSession, for: connection)
        sendConnack(.accepted, sessionPresent: kept != nil, to: connection)
        connect = nil
        guard let kept else { return }
        awaitingRelease = kept.awaitingRelease
        inflight = MQTTInflight(next: kept.nextPacketID)
        for filter in kept.filters {
            let added = filters.add(filter)
            guard !added.isEmpty else { continue }
            // A subject history kept messages of while the client was away: caught up from there, as RESUME does.
            if filter.patterns.group == nil, added == [filter.patterns.pattern],
               let point = kept.resumeFrom[filter.patterns.pattern] {
                execute(Array("RESUME \(filter.patterns.pattern) \(point.epoch) \(point.after)".utf8), owing: .ignore,
                        of: connection)
            } else {
                execute(subscribeLine(added, group: filter.patterns.group), owing: .ignore, of: connection)
            }
        }
        for entry in kept.unacknowledged {
            if entry.released {
                inflight.add(entry)
                send(.pubrel(packetID: entry.packetID), to: connection)
            } else {
                resend(entry, to: connection)
            }
        }
        for message in kept.queued { deliver(message, retain: false, to: connection) }
    }

    /// `SUB <patterns>` or `QSUB <group> <patterns>`.
    func subscribeLine(_ patterns: [String], group: String?) -> [UInt8] {
        var line = Array((group.map { "QSUB \($0)" } ?? "SUB").utf8)
        for pattern in patterns {
            line.append(UInt8(ascii: " "))
            line += Array(pattern.utf8)
        }
        return line
    }
}
