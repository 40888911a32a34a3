import FanoutEventLoop
import FanoutProtocol

extension Server {
    func accept(fd: Int32, peer: SocketAddress, tls: Bool = false) {
        guard connections.count < configuration.limits.maxConnections else {
            return refuse(fd, peer: peer, "too many connections (max_connections=\(configuration.limits.maxConnections))")
        }
        let host = peer.isUnix ? "unix" : peer.host
        if let perHost = configuration.limits.maxConnectionsPerIP, !peer.isUnix, connectionsPerHost[host, default: 0] >= perHost {
            return refuse(fd, peer: peer, "too many connections from \(host) (max_connections_per_ip=\(perHost))")
        }
        let socket: BufferedSocket
        do {
            socket = try BufferedSocket(loop: loop, fd: fd, tls: tls ? tlsContext : nil)
        } catch {
            logger.error("cannot set up connection from \(peer): \(error)")
            RawSocket.refuse(fd, with: "")
            return
        }
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = ClientConnection(
            id: id, peer: peer, socket: socket, maxLine: configuration.limits.maxLine, server: self,
            census: census
        )
        socket.delegate = connection
        // Told about drains from the first time something waits for one: a pause on its own replies, a held
        // publisher, or a publish-to-write measurement (see `ClientConnection.socketDidDrain`). Left on after
        // that: a drain notice nobody waits for does nothing.
        socket.reportsDirectDrains = false
        if !peer.isUnix {
            socket.disableNagle()
            if let keepalive = configuration.timeouts.keepalive { socket.enableKeepalive(idle: keepalive) }
            if configuration.limits.sendBufferBytes > 0 { socket.setSendBuffer(bytes: configuration.limits.sendBufferBytes) }
        }
        socket.setTimeouts(read: configuration.timeouts.idleTimeout, write: configuration.timeouts.writeTimeout)
        connections[id] = connection
        connectionsPerHost[host, default: 0] += 1
        stats.accepted += 1
        if configuration.auth.requiresAuth {
            startAuthDeadline(for: connection)
        } else {
            connection.grant = .unrestricted
        }
        socket.write(Encoder.greeting(serverName: configuration.serverName, authRequired: configuration.auth.requiresAuth))
        socket.enableReading()
        logger.debug("connect", metadata: ["client": "\(id)", "peer": "\(peer)"])
    }

    private func refuse(_ fd: Int32, peer: SocketAddress, _ text: String) {
        stats.limitRefusals += 1
        logger.info("refused \(peer): limit \(text)")
        RawSocket.refuse(fd, with: ProtocolError(.limit, text).line)
    }

    func acceptFailed(_ error: SystemError) {
        // EMFILE/ENFILE leave the connection queued, so the listener would spin: pause accepting for a moment.
        logger.error("\(error); pausing accept for 1s")
        (inheritedListeners + listeners.values + tlsListeners.values).forEach { $0.pause() }
        let retry = LoopTimer(loop: loop) { [unowned self] in
            (self.inheritedListeners + self.listeners.values + self.tlsListeners.values).forEach { $0.resume() }
        }
        retry.schedule(after: .seconds(1))
        acceptRetryTimer = retry
    }
}
