import FanoutEventLoop
import FanoutHTTP

extension HTTPFront {
    /// `GET /ws`: checks the handshake (version, key, Origin against http_allowed_origins), answers 101 and
    /// makes the socket a client connection like any other, with the WebSocket transport. A token in
    /// `Authorization: Bearer`, `?token=` or the subprotocol `bearer.<token>` authenticates it at once, as an
    /// AUTH would (its reply follows the greeting); the 101 names the subprotocol `fanout` when it was offered.
    func upgradeToWebSocket(_ head: HTTPRequestHead, exchange: HTTPExchange) {
        let key: String
        let configuration = host.configuration
        switch WebSocketHandshake.validate(head, allowedOrigins: configuration.listeners.httpAllowedOrigins) {
        case .failure(let refusal):
            return exchange.finish(WebSocketHandshake.response(refusal))
        case .success(let valid):
            key = valid
        }
        let peer = exchange.peer
        let peerHost = peer.host
        if let perHost = configuration.limits.maxConnectionsPerIP,
           host.connections.perHost[peerHost, default: 0] >= perHost {
            host.stats.limitRefusals += 1
            return exchange.finish(.json(status: 503, HTTPRefusal.errorJSON(code: "limit",
                "too many connections from \(peerHost) (max_connections_per_ip=\(perHost))")))
        }
        if host.auth.isFullOfUnauthenticated {
            host.stats.limitRefusals += 1
            return exchange.finish(.json(status: 503, HTTPRefusal.errorJSON(code: "limit",
                "too many connections waiting to authenticate (max_unauthenticated=\(configuration.auth.maxUnauthenticated))")))
        }
        let offered = WebSocketHandshake.offeredSubprotocols(head)
        let presented = Self.bearerToken(head) ?? offered.token ?? head.queryValues("token").first
        if let refusal = host.auth.userConnectionRefusal(presenting: presented) {
            return exchange.finish(refusal.response)
        }
        let id = exchange.id
        guard let socket = exchange.takeSocket() else { return }
        let subprotocol = offered.speaksFanout ? WebSocketHandshake.subprotocol : nil
        socket.write(WebSocketHandshake.response(key: key, subprotocol: subprotocol, sha1: { Digest.sha1($0) }))
        let connection = host.admit(socket: socket, peer: peer, host: peerHost, transport: .webSocket, id: id,
                                    prepare: nil)
        if let token = presented, configuration.auth.requiresAuth {
            host.auth.authenticate(connection, token: token)
        }
        // Frames that came with the handshake are in the input already: no read event will announce them.
        connection.readAgain()
    }

    /// The token of `Authorization: Bearer <token>`.
    static func bearerToken(_ head: HTTPRequestHead) -> String? {
        guard let value = head.header("authorization"), value.lowercased().hasPrefix("bearer ") else { return nil }
        let token = value.dropFirst(7).trimmingCharacters(in: " ")
        return token.isEmpty ? nil : token
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
