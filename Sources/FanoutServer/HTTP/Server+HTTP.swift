import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol

extension Server {
    /// Serves HTTP on `http_listen` (or the socket handed over for it), when set: `/metrics`, `/healthz`,
    /// WebSocket at `/ws`, and the routes in `Server+HTTPRoutes.swift`.
    func startHTTP(inheritedFD: Int32? = nil) throws {
        guard inheritedFD != nil || configuration.listeners.httpListen != nil else {
            metrics = nil
            return
        }
        if metrics == nil {
            // The backend first: metrics made before the bootstrap would go to swift-metrics' no-op handler.
            if metricsExposition == nil, let start = metricsBackend { metricsExposition = start() }
            metrics = ServerMetrics()
        }
        let onAccept: (Int32, SocketAddress) -> Void = { [unowned self] fd, peer in self.acceptHTTP(fd: fd, peer: peer) }
        let onError: (SystemError) -> Void = { [unowned self] error in self.acceptFailed(error) }
        let listener: Listener
        if let inheritedFD {
            listener = try Listener(loop: loop, listeningFD: inheritedFD, onAccept: onAccept, onError: onError)
            http.inheritedListener = listener
        } else {
            listener = try Listener(loop: loop, address: try SocketAddress(parsing: configuration.listeners.httpListen!),
                                    onAccept: onAccept, onError: onError)
            http.listener = listener
        }
        logger.notice("serving HTTP on http://\(listener.address)/ (metrics at /metrics, WebSocket at /ws)")
    }

    /// A new HTTP connection: counted against max_connections and max_connections_per_ip like a client,
    /// since it may become one, so that slow request heads from one address cannot take every slot.
    private func acceptHTTP(fd: Int32, peer: SocketAddress) {
        let refusal = HTTPResponse(status: 503, text: "too many connections\n").encoded()
        guard connections.count + loop.lingeringCount + http.exchanges.count < configuration.limits.maxConnections else {
            stats.limitRefusals += 1
            RawSocket.refuse(fd, with: String(decoding: refusal, as: UTF8.self))
            return
        }
        if let perHost = configuration.limits.maxConnectionsPerIP,
           connections.perHost[peer.host, default: 0] + http.exchangesPerHost[peer.host, default: 0] >= perHost {
            stats.limitRefusals += 1
            RawSocket.refuse(fd, with: String(decoding: refusal, as: UTF8.self))
            return
        }
        let socket: BufferedSocket
        do {
            socket = try BufferedSocket(loop: loop, fd: fd)
        } catch {
            logger.error("cannot set up HTTP connection from \(peer): \(error)")
            RawSocket.refuse(fd, with: "")
            return
        }
        let exchange = HTTPExchange(id: connections.takeID(), peer: peer, socket: socket, server: self)
        socket.delegate = exchange
        socket.disableNagle()
        http.exchanges[exchange.id] = exchange
        http.exchangesPerHost[peer.host, default: 0] += 1
        socket.enableReading()
    }

    func metricsResponse() -> HTTPResponse {
        metrics?.sync(from: self)
        return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                            body: metricsExposition?() ?? [])
    }

    func healthResponse() -> HTTPResponse {
        lifecycle.isShuttingDown ? HTTPResponse(status: 503, text: "shutting down\n") : HTTPResponse(status: 200, text: "ok\n")
    }

    /// `{"error":"<code>","message":"<text>"}`: an HTTP error body names the protocol's error code.
    static func errorJSON(code: String, _ message: String) -> String {
        "{\"error\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}"
    }
}
