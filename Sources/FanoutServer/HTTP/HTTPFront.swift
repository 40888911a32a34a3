import FanoutEngine
import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol
import FanoutSubjects
import Logging

/// What the HTTP front needs from the server: its configuration, log and counters, the connection table for
/// limits and for the connections it makes (a WebSocket, an event stream, a publish), the dispatcher that runs
/// their commands, the memory bound that counts a body, and the figures `/metrics` and `/groups` report.
protocol HTTPFrontHost: ServerMetricsHost {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var connections: ConnectionTable { get set }
    var stats: ServerStats { get set }
    var listening: ListenerSet { get }
    var auth: Authenticator { get }
    var lifecycle: Lifecycle! { get }
    var index: SubjectIndex<ClientConnection> { get }
    var engine: any Engine { get }
    var isStandalone: Bool { get }
    var fanout: Fanout<Server> { get }
    /// Bodies' announced lengths count toward max_memory while they are read.
    var memory: MemoryGuard! { get }
    var metrics: ServerMetrics? { get set }
    var metricsExposition: (() -> [UInt8])? { get set }
    var metricsBackend: (() -> () -> [UInt8])? { get }
    func acceptFailed(_ error: SystemError)
    @discardableResult
    func admit(socket: BufferedSocket, peer: SocketAddress, host: String, transport: Transport,
               id givenID: UInt64?, prepare: ((ClientConnection) -> Void)?) -> ClientConnection
    /// A connection of this server for one request, outside the connection table (`POST /publish/...`).
    func requestConnection(id: UInt64, peer: SocketAddress, socket: BufferedSocket) -> ClientConnection
    func execute(_ line: UnsafeRawBufferPointer, from connection: ClientConnection) -> LineFramer.Next
    func publishBinary(_ payload: UnsafeRawBufferPointer, from connection: ClientConnection)
    func readEnded()
}

/// The HTTP listener and what it serves besides upgraded connections: requests being read
/// (`HTTPExchange`), their routes (`HTTPFront+Routes.swift`), HTTP publishes waiting on an engine, upgrades to
/// WebSocket and event streams, and the event streams' keep-alive.
///
/// Worst case: one exchange per HTTP connection still reading its request (within max_connections), one
/// waiting publisher per HTTP publish an engine has not answered yet.
final class HTTPFront {
    unowned let host: any HTTPFrontHost
    let loop: EventLoop
    /// The listener (http_listen), or the one socket activation handed over for it.
    var listener: Listener?
    var inheritedListener: Listener?
    /// The TLS listener (https_listen, `HTTPFront+TLS.swift`), or the one handed over as "https", and the
    /// context its new connections get: replaced on every reload, while open connections keep the one they
    /// were accepted with (each SSL object holds its context).
    var tlsListener: Listener?
    var inheritedTLSListener: Listener?
    var tlsContext: TLSContext?
    /// TLS connections whose handshake has not finished, by exchange id, with the timer that closes them at
    /// tls_handshake_timeout. Worst case: one per HTTPS connection still shaking hands (within the exchanges).
    var handshakeDeadlines: [UInt64: LoopTimer] = [:]
    /// Connections reading their request, by id (the id a WebSocket upgrade keeps).
    private(set) var exchanges: [UInt64: HTTPExchange] = [:]
    /// Connections reading their request, per peer host, for max_connections_per_ip.
    private var exchangesPerHost: [String: Int] = [:]
    /// HTTP publishes waiting for an engine's answer (several nodes), kept alive until it comes.
    var publishers: [UInt64: ClientConnection] = [:]
    /// Sends Server-Sent Events streams their keep-alive comments.
    var eventStreamTimer: LoopTimer?

    init(host: any HTTPFrontHost, loop: EventLoop) {
        self.host = host
        self.loop = loop
    }

    /// Serves HTTP on `http_listen` and HTTPS on `https_listen` (or the sockets handed over for them), when
    /// set: `/metrics`, `/healthz`, WebSocket at `/ws`, and the routes in `HTTPFront+Routes.swift`.
    func start(inheritedFD: Int32? = nil, inheritedTLSFD: Int32? = nil) throws {
        let listeners = host.configuration.listeners
        let plain = inheritedFD != nil || listeners.httpListen != nil
        let tls = inheritedTLSFD != nil || listeners.httpsListen != nil
        guard plain || tls else {
            host.metrics = nil
            return
        }
        if host.metrics == nil {
            // The backend first: metrics made before the bootstrap would go to swift-metrics' no-op handler.
            if host.metricsExposition == nil, let start = host.metricsBackend { host.metricsExposition = start() }
            host.metrics = ServerMetrics()
        }
        if tls && tlsListener == nil && inheritedTLSListener == nil { try startTLS(inheritedFD: inheritedTLSFD) }
        guard plain && listener == nil && inheritedListener == nil else { return }
        let onAccept: (Int32, SocketAddress) -> Void = { [unowned self] fd, peer in self.accept(fd: fd, peer: peer) }
        let onError: (SystemError) -> Void = { [unowned self] error in self.host.acceptFailed(error) }
        let listener: Listener
        if let inheritedFD {
            listener = try Listener(loop: loop, listeningFD: inheritedFD, onAccept: onAccept, onError: onError)
            inheritedListener = listener
        } else {
            let address = try SocketAddress(parsing: host.configuration.listeners.httpListen!)
            listener = try Listener(loop: loop, address: address, onAccept: onAccept, onError: onError)
            self.listener = listener
        }
        host.logger.notice("serving HTTP on http://\(listener.address)/ (metrics at /metrics, WebSocket at /ws)")
    }

    /// After a reload: a changed http_listen or https_listen is bound again (a socket handed over stays).
    func apply(_ fresh: ServerConfiguration, old: ServerConfiguration) {
        applyTLS(fresh, old: old)
        guard inheritedListener == nil && fresh.listeners.httpListen != old.listeners.httpListen else { return }
        listener = nil
        do {
            try start()
        } catch {
            host.logger.error("cannot serve HTTP on \(fresh.listeners.httpListen ?? ""): \(error)")
        }
    }

    /// Shutting down: no more HTTP connections, and each request being read is answered as `/healthz` is.
    func shutdown() {
        listener = nil
        inheritedListener = nil
        tlsListener = nil
        inheritedTLSListener = nil
        for exchange in Array(exchanges.values) { exchange.finish(healthResponse()) }
    }

    /// A new HTTP connection: counted against max_connections and max_connections_per_ip like a client,
    /// since it may become one, so that slow request heads from one address cannot take every slot.
    func accept(fd: Int32, peer: SocketAddress, tls: TLSContext? = nil) {
        let refusal = HTTPResponse(status: 503, text: "too many connections\n").encoded()
        let limits = host.configuration.limits
        guard host.connections.count + loop.lingeringCount + exchanges.count < limits.maxConnections else {
            host.stats.limitRefusals += 1
            RawSocket.refuse(fd, with: String(decoding: refusal, as: UTF8.self))
            return
        }
        if let perHost = limits.maxConnectionsPerIP,
           host.connections.perHost[peer.host, default: 0] + exchangesPerHost[peer.host, default: 0] >= perHost {
            host.stats.limitRefusals += 1
            RawSocket.refuse(fd, with: String(decoding: refusal, as: UTF8.self))
            return
        }
        let socket: BufferedSocket
        do {
            socket = try BufferedSocket(loop: loop, fd: fd, tls: tls)
        } catch {
            host.logger.error("cannot set up HTTP connection from \(peer): \(error)")
            RawSocket.refuse(fd, with: "")
            return
        }
        let exchange = HTTPExchange(id: host.connections.takeID(), peer: peer, socket: socket, front: self)
        socket.delegate = exchange
        socket.disableNagle()
        exchanges[exchange.id] = exchange
        exchangesPerHost[peer.host, default: 0] += 1
        if tls != nil { startHandshakeDeadline(for: exchange) }
        socket.enableReading()
    }

    /// An exchange has ended (answered, upgraded or closed): it leaves the table.
    func exchangeEnded(_ exchange: HTTPExchange) {
        guard exchanges.removeValue(forKey: exchange.id) != nil else { return }
        handshakeDeadlines[exchange.id] = nil
        if let count = exchangesPerHost[exchange.peer.host] {
            exchangesPerHost[exchange.peer.host] = count > 1 ? count - 1 : nil
        }
    }

    func tearDown() {
        listener = nil
        inheritedListener = nil
        tlsListener = nil
        inheritedTLSListener = nil
        tlsContext = nil
        handshakeDeadlines.removeAll()
        exchanges.removeAll()
        exchangesPerHost.removeAll()
        publishers.removeAll()
        eventStreamTimer = nil
    }
}
