import FanoutEventLoop
import FanoutProtocol

/// The connection's life: open (with TLS when configured), greeting and AUTH, ready, lost, and reconnecting
/// with backoff. Only a connection that was up is retried; a first connect that fails completes `connect`.
extension FanoutClient {
    func openSocket() {
        phase = .connecting
        serverName = nil
        connectStartedAt = .now
        framer = LineFramer(maxLine: options.maxLine)
        do {
            if let settings = options.tls, tlsContext == nil {
                tlsContext = try TLSContext(serverCA: settings.serverCA, certificate: settings.certificate,
                                            privateKey: settings.privateKey)
            }
            let serverName = options.tls.map { $0.serverName ?? address.host }
            let socket = try BufferedSocket(loop: loop, connectingTo: address, tls: tlsContext, serverName: serverName)
            socket.delegate = self
            socket.enableReading()
            self.socket = socket
        } catch {
            connectionLost(reason: error.reason)
        }
    }

    public func socketDidConnect(_ socket: BufferedSocket) {
        socket.disableNagle()
    }

    public func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd) {
        switch reason {
        case .eof: connectionLost(reason: "closed by server")
        case .error(let errno):
            let text = SystemError(errno: errno, operation: "").reason
            connectionLost(reason: errno == 0 && phase == .connecting ? "connection refused" : text)
        case .readTimeout, .writeTimeout: connectionLost(reason: "\(reason)")
        case .tls(let text): connectionLost(reason: "TLS: \(text)")
        }
    }

    func connectionLost(reason: String) {
        guard phase != .closed, phase != .waitingToReconnect else { return }
        let wasConnecting = phase == .connecting
        socket?.delegate = nil
        socket = nil
        failPending(.disconnected(reason))
        if wasConnecting && !hasConnected {
            phase = .closed
            watchdog = nil
            let completion = connectCompletion
            connectCompletion = nil
            completion?(.failure(.cannotConnect(address: address.description, reason: reason)))
            return
        }
        onEvent?(.disconnected(reason: reason))
        guard options.reconnect.enabled else {
            phase = .closed
            watchdog = nil
            return
        }
        scheduleReconnect()
    }

    func scheduleReconnect() {
        phase = .waitingToReconnect
        attempt += 1
        let delay = options.reconnect.delay(forAttempt: attempt, random: Double.random(in: 0..<1, using: &generator))
        onEvent?(.reconnecting(attempt: attempt, delay: delay))
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.reconnectTimer = nil
            self.openSocket()
        }
        timer.schedule(after: delay)
        reconnectTimer = timer
    }

    func failPending(_ error: ClientError) {
        let failed = pending
        pending.removeAll()
        for entry in failed { entry.fail(error) }
        let waiting = held
        held.removeAll()
        for entry in waiting { entry.fail(error) }
        // The server closes the questions of a connection that goes: their DONE will never come.
        let open = questions.values
        questions.removeAll()
        binaryHeader = nil
        for question in open { question.finish(.failure(error)) }
    }

    func greeted(serverName name: String, epoch: String?) {
        serverName = name
        resumeState.connected(epoch: epoch)
        if options.tokenSource != nil {
            // A fresh token for each connection: the one the last connection had may have expired.
            switch freshToken() {
            case .success(let fresh): token = fresh
            case .failure(let failure):
                connectionLost(reason: "no token: \(failure)")
                return
            }
        }
        if let token {
            // AUTH goes ahead of anything queued since the connect; the connection is ready once it succeeds.
            socket?.write("AUTH \(token)\n")
            pending.prepend(PendingReply(kind: .authenticate))
            return
        }
        becomeReady()
    }

    func becomeReady() {
        guard let name = serverName else { return }
        phase = .ready
        replyProgressMark = nil
        let reconnect = hasConnected
        hasConnected = true
        attempt = 0
        if reconnect { restoreSubscriptions() }
        let waiting = held
        held.removeAll()
        for entry in waiting { entry.send() }
        onEvent?(.connected(serverName: name, reconnect: reconnect))
        if let completion = connectCompletion {
            connectCompletion = nil
            completion(.success(name))
        }
    }
}
