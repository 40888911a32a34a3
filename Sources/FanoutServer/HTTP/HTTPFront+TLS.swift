import FanoutEventLoop

/// HTTPS: the same routes as http_listen, on https_listen (or the socket handed over as "https"), over TLS with
/// tls_cert and tls_key. The certificate is read again on every reload for the connections accepted after it;
/// open ones keep theirs. tls_client_ca does not apply here: browsers rarely hold client certificates, and
/// the line protocol's tls_listen is where mutual TLS is offered.
extension HTTPFront {
    /// Whether `configuration` (with what socket activation handed over) serves HTTPS.
    func servesTLS(_ configuration: ServerConfiguration) -> Bool {
        configuration.listeners.httpsListen != nil || inheritedTLSListener != nil
    }

    /// The context for HTTPS connections: the TLS listeners' certificate and key, without a client CA.
    static func makeTLSContext(_ configuration: ServerConfiguration) throws -> TLSContext {
        guard let certificate = configuration.tls.certificate, let key = configuration.tls.key else {
            throw SystemError(errno: 0, operation: "https_listen: needs tls_cert and tls_key")
        }
        return try TLSContext(certificateChain: certificate, privateKey: key, clientCA: nil)
    }

    /// Binds https_listen, or serves `inheritedFD`, with the current context (made now if there is none).
    func startTLS(inheritedFD: Int32?) throws {
        if tlsContext == nil { tlsContext = try Self.makeTLSContext(host.configuration) }
        // The context is read at each accept, so a reload's new certificate serves every later connection.
        let onAccept: (Int32, SocketAddress) -> Void = { [unowned self] fd, peer in
            self.accept(fd: fd, peer: peer, tls: self.tlsContext)
        }
        let onError: (SystemError) -> Void = { [unowned self] error in self.host.acceptFailed(error) }
        let listener: Listener
        if let inheritedFD {
            listener = try Listener(loop: loop, listeningFD: inheritedFD, onAccept: onAccept, onError: onError)
            inheritedTLSListener = listener
        } else {
            let address = try SocketAddress(parsing: host.configuration.listeners.httpsListen!)
            listener = try Listener(loop: loop, address: address, onAccept: onAccept, onError: onError)
            tlsListener = listener
        }
        host.logger.notice("serving HTTPS on https://\(listener.address)/ (metrics at /metrics, WebSocket at /ws)")
    }

    /// After a reload: a changed https_listen is bound again (a socket handed over stays).
    func applyTLS(_ fresh: ServerConfiguration, old: ServerConfiguration) {
        guard inheritedTLSListener == nil && fresh.listeners.httpsListen != old.listeners.httpsListen else { return }
        if tlsListener != nil {
            tlsListener = nil
            host.logger.notice("stopped serving HTTPS on \(old.listeners.httpsListen ?? "")")
        }
        guard fresh.listeners.httpsListen != nil else {
            if listener == nil && inheritedListener == nil { host.metrics = nil }
            return
        }
        do {
            try start()
        } catch {
            host.logger.error("cannot serve HTTPS on \(fresh.listeners.httpsListen ?? ""): \(error)")
        }
    }

    /// Closes an HTTPS connection whose handshake has not finished within tls_handshake_timeout (a client that
    /// connects and never sends its ClientHello would otherwise hold a slot until http_request_timeout).
    func startHandshakeDeadline(for exchange: HTTPExchange) {
        let id = exchange.id
        let timer = LoopTimer(loop: loop) { [unowned self] in
            guard let exchange = self.exchanges[id] else { return }
            self.host.logger.debug("HTTPS handshake not finished within tls_handshake_timeout",
                                   metadata: ["peer": "\(exchange.peer)"])
            // Dropping the socket closes it: there is no TLS session to say anything over.
            _ = exchange.takeSocket()
        }
        timer.schedule(after: host.configuration.timeouts.tlsHandshakeTimeout)
        handshakeDeadlines[id] = timer
    }

    /// The TLS handshake of `exchange` finished: from now on http_request_timeout bounds it.
    func handshakeFinished(_ exchange: HTTPExchange) {
        handshakeDeadlines[exchange.id] = nil
    }
}
