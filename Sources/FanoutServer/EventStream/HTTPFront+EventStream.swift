import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol

extension HTTPFront {
    /// How often an idle event stream gets a comment line, so that proxies do not cut it.
    static let eventStreamKeepAlive = Duration.seconds(15)
    /// Subjects (patterns included) one stream may name.
    static let maxStreamSubjects = 64

    /// `GET /events?subject=P&subject=Q[&token=T]`: a client connection with the event-stream transport,
    /// subscribed as its RESUMEs (concrete subjects, after their Last-Event-ID positions) and SUBs
    /// (patterns) would subscribe it. Permissions and limits are the protocol's; a token is checked first
    /// so that a refusal is an HTTP status. The query string is never logged: it may hold the token.
    func openEventStream(_ head: HTTPRequestHead, exchange: HTTPExchange) {
        let subjects = head.queryValues("subject")
        guard !subjects.isEmpty, subjects.count <= Self.maxStreamSubjects,
              subjects.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else {
            return exchange.finish(HTTPRefusal(status: 400, code: "syntax",
                "name 1 to \(Self.maxStreamSubjects) subjects: /events?subject=a.b&subject=c.>").response)
        }
        let concrete = subjects.filter { !Subject.isWildcard($0) }
        guard concrete.count <= EventStreamSession.maxResumable else {
            return exchange.finish(HTTPRefusal(status: 400, code: "limit",
                "at most \(EventStreamSession.maxResumable) concrete subjects per stream").response)
        }
        let token = Self.bearerToken(head) ?? head.queryValues("token").first
        let granted: Authenticator.HTTPGrant
        switch host.auth.httpGrant(token: token, peerHost: exchange.peer.host, requestID: exchange.id) {
        case .failure(let refusal): return exchange.finish(refusal.response)
        case .success(let value): granted = value
        }
        if let refusal = host.auth.userConnectionRefusal(for: granted.user) {
            return exchange.finish(refusal.response)
        }
        if let refused = subjects.first(where: { !granted.grant.permissions.maySubscribe($0) }) {
            return exchange.finish(HTTPRefusal(status: 403, code: "denied", "not allowed to subscribe to '\(refused)'").response)
        }
        let configuration = host.configuration
        if let perHost = configuration.limits.maxConnectionsPerIP, host.connections.perHost[exchange.peer.host, default: 0] >= perHost {
            host.stats.limitRefusals += 1
            return exchange.finish(HTTPRefusal(status: 503, code: "limit", "too many connections (max_connections_per_ip=\(perHost))").response)
        }
        let epoch = host.engine.epoch
        let resumed = head.header("last-event-id").flatMap {
            EventStreamSession.positions(fromEventID: $0, epoch: epoch, count: concrete.count)
        }
        let id = exchange.id
        let peer = exchange.peer
        var headers = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\n"
        headers += "X-Accel-Buffering: no\r\n"
        if let origin = exchange.allowedOrigin {
            headers += "Access-Control-Allow-Origin: \(origin)\r\nVary: Origin\r\n"
        }
        // The body runs until the connection closes; EventSource reconnects a second after it does.
        headers += "Connection: close\r\n\r\nretry: 1000\n\n"
        guard let socket = exchange.takeSocket() else { return }
        socket.write(headers)
        let session = EventStreamSession(subjects: concrete, positions: resumed ?? Array(repeating: 0, count: concrete.count),
                                         epoch: epoch)
        let connection = host.admit(socket: socket, peer: peer, host: peer.host, transport: .eventStream, id: id,
                               prepare: { $0.madeExtras.adapter = EventStreamTransport(session: session) })
        // An application token's expiry closes the stream after an `auth-expired` error event and the grace.
        host.auth.admitAuthenticated(connection, granted)
        // RESUMEs before the SUB of any wildcard, as the protocol asks of a client resuming under one.
        for (index, subject) in concrete.enumerated() where connection.socket != nil {
            session.pendingReplies.append(index)
            let line = resumed.map { "RESUME \(subject) \(epoch) \($0[index])" } ?? "RESUME \(subject)"
            _ = Array(line.utf8).withUnsafeBytes { host.execute($0, from: connection) }
        }
        let patterns = subjects.filter { Subject.isWildcard($0) }
        if !patterns.isEmpty, connection.socket != nil {
            _ = Array("SUB \(patterns.joined(separator: " "))".utf8).withUnsafeBytes { host.execute($0, from: connection) }
        }
        host.readEnded()
        startEventStreamKeepAlive()
    }

    /// Every `eventStreamKeepAlive`, a comment line to each event stream. Cost: a scan of the connection table.
    private func startEventStreamKeepAlive() {
        guard eventStreamTimer == nil else { return }
        let timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
            for connection in self.host.connections.values where connection.transport == .eventStream {
                connection.socket?.write(": keep-alive\n\n")
            }
        }
        timer.schedule(after: Self.eventStreamKeepAlive)
        eventStreamTimer = timer
    }
}
