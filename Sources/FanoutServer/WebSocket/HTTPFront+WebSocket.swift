import FanoutEventLoop
import FanoutHTTP

extension HTTPFront {
    /// `GET /ws`: checks the handshake (version, key, Origin against http_allowed_origins), answers 101 and
    /// makes the socket a client connection like any other, with the WebSocket transport. A bearer token in
    /// `Authorization` authenticates it at once, as an AUTH would (its reply follows the greeting).
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
        if let refusal = host.auth.userConnectionRefusal(bearer: Self.bearerToken(head)) {
            return exchange.finish(refusal.response)
        }
        let id = exchange.id
        guard let socket = exchange.takeSocket() else { return }
        socket.write(WebSocketHandshake.response(key: key, sha1: { Digest.sha1($0) }))
        let connection = host.admit(socket: socket, peer: peer, host: peerHost, transport: .webSocket, id: id,
                                    prepare: nil)
        if let token = Self.bearerToken(head), configuration.auth.requiresAuth {
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
