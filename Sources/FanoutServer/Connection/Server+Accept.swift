import FanoutEventLoop
import FanoutProtocol

/// The server's own work of letting a client in: the limits checked before a socket is made, the connection's
/// socket options, read timeout and deadlines, and the greeting. Its departure is `Server+Disconnect.swift`.
extension Server {
    func accept(fd: Int32, peer: SocketAddress, tls: Bool = false, transport given: Transport? = nil) {
        // Sockets still closing hold descriptors too: counting them keeps the process's descriptors within
        // max_connections plus listeners, whatever the close rate.
        guard connections.count + loop.lingeringCount < configuration.limits.maxConnections else {
            let limit = configuration.limits.maxConnections
            return refuse(fd, peer: peer, "too many connections (max_connections=\(limit))")
        }
        let host = peer.isUnix ? "unix" : peer.host
        if let perHost = configuration.limits.maxConnectionsPerIP, !peer.isUnix,
           connections.perHost[host, default: 0] >= perHost {
            return refuse(fd, peer: peer, "too many connections from \(host) (max_connections_per_ip=\(perHost))")
        }
        if auth.isFullOfUnauthenticated {
            let limit = configuration.auth.maxUnauthenticated
            return refuse(fd, peer: peer, "too many connections waiting to authenticate (max_unauthenticated=\(limit))")
        }
        let socket: BufferedSocket
        do {
            socket = try BufferedSocket(loop: loop, fd: fd, tls: tls ? listening.tlsContext : nil)
        } catch {
            logger.error("cannot set up connection from \(peer): \(error)")
            RawSocket.refuse(fd, with: "")
            return
        }
        admit(socket: socket, peer: peer, host: host, transport: given ?? (tls ? .tls : (peer.isUnix ? .unix : .tcp)))
    }

    /// A connection of this server for one request, outside the connection table (`POST /publish/...`).
    func requestConnection(id: UInt64, peer: SocketAddress, socket: BufferedSocket) -> ClientConnection {
        ClientConnection(id: id, peer: peer, socket: socket, maxLine: configuration.limits.maxLine, server: self,
                         census: connections.census)
    }

    /// Makes a client connection of an accepted socket (or of an upgraded HTTP one) whose limits were checked:
    /// table, counters, auth deadline, greeting.
    @discardableResult
    func admit(socket: BufferedSocket, peer: SocketAddress, host: String, transport: Transport,
               id givenID: UInt64? = nil, prepare: ((ClientConnection) -> Void)? = nil) -> ClientConnection {
        let tls = transport == .tls || transport == .mqttTLS
        let id = givenID ?? connections.takeID()
        let connection = ClientConnection(
            id: id, peer: peer, socket: socket, maxLine: configuration.limits.maxLine, server: self,
            census: connections.census
        )
        connection.transport = transport
        if transport.isMQTT { mqttStats.connections += 1 }
        if transport == .webSocket {
            connection.madeExtras.adapter = WebSocketTransport(maxLine: configuration.limits.maxLine,
                                                               maxPayload: configuration.limits.maxPayload)
        } else if transport.isMQTT {
            connection.madeExtras.adapter = MQTTTransport(limits: configuration.limits)
        }
        prepare?(connection)
        socket.delegate = connection
        // Told about drains from the first time something waits for one: a pause on its own replies, a held
        // publisher, or a publish-to-write measurement (see `ClientConnection.socketDidDrain`). Left on after
        // that: a drain notice nobody waits for does nothing.
        socket.reportsDirectDrains = false
        if !peer.isUnix {
            socket.disableNagle()
            if let keepalive = configuration.timeouts.keepalive { socket.enableKeepalive(idle: keepalive) }
            let sendBuffer = configuration.limits.sendBufferBytes
            if sendBuffer > 0 { socket.setSendBuffer(bytes: sendBuffer) }
        }
        // An MQTT client has auth_timeout to send CONNECT, which sets its keep-alive (`MQTTTransport.accept`).
        let read = transport == .eventStream ? nil
            : transport.isMQTT ? configuration.auth.authTimeout : readTimeout(subscribed: false)
        socket.setTimeouts(read: read,
                           write: configuration.timeouts.writeTimeout)
        connections[id] = connection
        connections.perHost[host, default: 0] += 1
        stats.accepted += 1
        auth.connectionArrived(connection)
        connection.write(Encoder.greeting(serverName: configuration.serverName, authRequired: configuration.auth.requiresAuth,
                                          epoch: engine.epoch))
        if tls { auth.startHandshakeDeadline(for: connection) }
        socket.enableReading()
        logger.debug("connect", metadata: ["client": "\(id)", "peer": "\(peer)", "transport": "\(transport)"])
        return connection
    }

    private func refuse(_ fd: Int32, peer: SocketAddress, _ text: String) {
        stats.limitRefusals += 1
        if listening.refusalLog == nil {
            listening.refusalLog = LogThrottle(loop: loop) { [unowned self] count, sources in
                self.logger.info("\(count) more connections refused in the last \(SuppressedLog.interval)",
                                 metadata: ["from": "\(sources.joined(separator: ","))"])
            }
        }
        if listening.refusalLog?.shouldWrite(from: peer.isUnix ? "unix" : peer.host) == true {
            logger.info("refused \(peer): limit \(text)")
        }
        RawSocket.refuse(fd, with: ProtocolError(.limit, text).line)
    }

    func acceptFailed(_ error: SystemError) {
        // EMFILE/ENFILE leave the connection queued, so the listener would spin: pause accepting for a moment.
        logger.error("\(error); pausing accept for 1s")
        listening.all.forEach { $0.pause() }
        let retry = LoopTimer(loop: loop) { [unowned self] in
            self.listening.all.forEach { $0.resume() }
        }
        retry.schedule(after: .seconds(1))
        listening.acceptRetryTimer = retry
    }

    /// The read timeout for a connection: idle_timeout, or idle_unsubscribed_timeout when that is shorter and
    /// the connection holds no subscription. libevent restarts it on every read.
    func readTimeout(subscribed: Bool) -> Duration? {
        let idle = configuration.timeouts.idleTimeout
        guard !subscribed, let unsubscribed = configuration.timeouts.idleUnsubscribedTimeout else { return idle }
        return min(idle ?? unsubscribed, unsubscribed)
    }

    /// The name of the setting behind `readTimeout(subscribed:)`, for the farewell line.
    func idleSetting(subscribed: Bool) -> String {
        readTimeout(subscribed: subscribed) == configuration.timeouts.idleTimeout ? "idle_timeout"
            : "idle_unsubscribed_timeout"
    }

    /// Moves a connection to the read timeout for its subscriptions, when it has just gained its first or
    /// lost its last.
    func updateReadTimeout(of connection: ClientConnection) {
        // An event stream's client never sends anything after its request: idleness is not a sign of death. An
        // MQTT client's keep-alive decides its own.
        guard connection.transport != .eventStream, !connection.transport.isMQTT else { return }
        connection.socket?.setTimeouts(read: readTimeout(subscribed: !connection.subscriptions.isEmpty),
                                       write: configuration.timeouts.writeTimeout)
    }
}
