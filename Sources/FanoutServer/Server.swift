import FanoutEventLoop
import FanoutProtocol
import Logging

/// The pub/sub server: one libevent loop, its listeners, the connection table and the subject index.
///
/// Threading: every method runs on the thread that calls `run()`; nothing here is locked or `Sendable`.
/// Create the server on that thread too.
public final class Server {
    public internal(set) var configuration: ServerConfiguration
    var logger: Logger
    let loop: EventLoop
    let startedAt = ContinuousClock.now

    /// Listeners bound from `configuration.listen`, by the address text that asked for them.
    var listeners: [String: Listener] = [:]
    /// TLS listeners from `configuration.tlsListen`, and the context their connections get.
    var tlsListeners: [String: Listener] = [:]
    var tlsContext: TLSContext?
    /// Listeners handed over by socket activation; while there are any, `listen` is not bound.
    var inheritedListeners: [Listener] = []
    /// The only strong owner of every client connection.
    var connections: [UInt64: ClientConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    let index = SubjectIndex<ClientConnection>()
    var sequences: SequenceTable
    var publishRun = PublishRun()
    /// Connections dropped while a publish run was open, kept alive until it closes: the run refers to its
    /// receivers unretained.
    var retiredDuringRun: [ClientConnection] = []
    var stats = ServerStats()
    /// Live connection objects: equal to `connections.count` between callbacks, or something leaks.
    let census = ObjectCensus()
    /// Subscriptions held by live connections.
    var subscriptionCount = 0
    /// Whether any configured user has subscribe-deny patterns: only then are a run's receivers filtered.
    /// Kept in step with `configuration` (init and reload) so that opening a run does not scan the users.
    var anyUserWithholds = false
    /// Live connections per peer host, for max_connections_per_ip.
    var connectionsPerHost: [String: Int] = [:]
    /// Subscriptions left behind (dead members, emptied sets) since the last sweep of the index.
    var staleSubscriptions = 0
    /// Publishers no longer held back by any subscriber, to be read again on the next pass.
    var releasedPublishers: [UInt64] = []
    var resumeTimer: LoopTimer?
    /// Scratch for building short replies without allocating.
    var replyScratch: [UInt8] = []

    private var signalWatchers: [SignalWatcher] = []
    private var sweepTimer: LoopTimer?
    private var acceptRetryTimer: LoopTimer?
    private var graceTimer: LoopTimer?
    private var statusTimer: LoopTimer?
    private var watchdogTimer: LoopTimer?
    var metricsServer: HTTPServer?
    var metrics: ServerMetrics?
    private var publishedAtLastStatus: UInt64 = 0
    private(set) var isShuttingDown = false

    /// Told about readiness, reloads, shutdown and status (systemd's sd_notify, in the daemon).
    public var notifier: ServiceNotifier?
    /// Reads the configuration again, for SIGHUP; nil means SIGHUP only logs that it cannot reload.
    public var configurationLoader: (() throws -> ServerConfiguration)?
    /// Renders the metrics registry in Prometheus text format, for `/metrics`.
    public var metricsExposition: (() -> [UInt8])?

    /// Creates the loop; nothing is bound until `start()`.
    public init(configuration: ServerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.loop = try EventLoop()
        self.sequences = SequenceTable(limit: configuration.maxTrackedSubjects)
        self.logger.logLevel = configuration.logLevel
        self.anyUserWithholds = Self.withholds(configuration)
        replyScratch.reserveCapacity(64)
    }

    static func withholds(_ configuration: ServerConfiguration) -> Bool {
        configuration.users.contains { !$0.permissions.subscribeDeny.isEmpty }
    }

    /// The addresses being listened on, with the kernel's port where port 0 was asked for.
    public var boundAddresses: [String] {
        (inheritedListeners + listeners.values + tlsListeners.values).map(\.address.description)
    }

    /// Binds every listen address (or serves `inheritedFDs`, from socket activation, instead), installs
    /// the signal handlers and timers. Throws on the first failure.
    public func start(inheritedFDs: [Int32] = []) throws {
        // Every connection is a descriptor: make room for max_connections plus listeners and headroom.
        let wanted = configuration.maxConnections + configuration.listen.count + 64
        let openFiles = ResourceLimits.raiseOpenFiles(to: wanted)
        if openFiles < wanted {
            logger.warning("open-files limit is \(openFiles), below max_connections + headroom (\(wanted))")
        }
        for fd in inheritedFDs {
            let listener = try Listener(
                loop: loop, listeningFD: fd,
                onAccept: { [unowned self] fd, peer in self.accept(fd: fd, peer: peer) },
                onError: { [unowned self] error in self.acceptFailed(error) }
            )
            inheritedListeners.append(listener)
            logger.notice("listening on \(listener.address) (socket activation)")
        }
        if inheritedListeners.isEmpty {
            for text in configuration.listen { listeners[text] = try bind(text) }
        }
        if !configuration.tlsListen.isEmpty {
            tlsContext = try makeTLSContext(configuration)
            for text in configuration.tlsListen { tlsListeners[text] = try bind(text, tls: true) }
        }
        try startMetrics()
        for signal in [SignalNumber.terminate, SignalNumber.interrupt] {
            signalWatchers.append(try SignalWatcher(loop: loop, signal: signal) { [unowned self] number in
                self.signalReceived(number)
            })
        }
        signalWatchers.append(try SignalWatcher(loop: loop, signal: SignalNumber.hangup) { [unowned self] _ in
            self.reload()
        })
        startServiceTimers()
        let sweepTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
            if self.staleSubscriptions > 0 { self.sweepIndex() }
        }
        sweepTimer.schedule(after: .seconds(10))
        self.sweepTimer = sweepTimer
    }

    /// The TLS context for `configuration`'s certificate, key and client CA.
    func makeTLSContext(_ configuration: ServerConfiguration) throws -> TLSContext {
        try TLSContext(certificateChain: configuration.tlsCertificate ?? "", privateKey: configuration.tlsKey ?? "",
                       clientCA: configuration.tlsClientCA)
    }

    /// Binds one configured listen address.
    func bind(_ text: String, tls: Bool = false) throws -> Listener {
        let listener = try Listener(
            loop: loop,
            address: try SocketAddress(parsing: text),
            unixMode: configuration.unixSocketMode,
            onAccept: { [unowned self] fd, peer in self.accept(fd: fd, peer: peer, tls: tls) },
            onError: { [unowned self] error in self.acceptFailed(error) }
        )
        logger.notice("listening on \(listener.address)\(tls ? " (tls)" : "")")
        return listener
    }

    /// Serves until shutdown completes. Returns normally after a graceful stop.
    public func run() throws {
        logger.info("serving with \(loop.backendName), max_connections=\(configuration.maxConnections)")
        notifier?.ready(status: statusLine(rate: 0))
        try loop.run()
        tearDown()
    }

    /// Periodic STATUS= lines and watchdog keep-alives, when a service manager listens.
    private func startServiceTimers() {
        guard let notifier else { return }
        let interval = Duration.seconds(2)
        let statusTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
            let published = self.stats.published
            let rate = Double(published - self.publishedAtLastStatus) / 2
            self.publishedAtLastStatus = published
            notifier.status(self.statusLine(rate: rate))
        }
        statusTimer.schedule(after: interval)
        self.statusTimer = statusTimer
        if let watchdogInterval = notifier.watchdogInterval {
            let watchdogTimer = LoopTimer(loop: loop, repeating: true) { notifier.watchdog() }
            watchdogTimer.schedule(after: watchdogInterval)
            self.watchdogTimer = watchdogTimer
            logger.info("watchdog keep-alive every \(watchdogInterval)")
        }
    }

    func statusLine(rate: Double) -> String {
        "clients=\(connections.count) subjects=\(index.storedPatternCount) msgs/s=\(Int(rate.rounded()))"
    }

    /// Stops accepting, tells every client `-ERR shutting-down`, and stops the loop once their output is
    /// flushed or `shutdown_grace` has passed.
    public func shutdown() {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        logger.notice("shutting down: \(connections.count) clients, grace \(configuration.shutdownGrace)")
        notifier?.stopping()
        listeners.removeAll()
        tlsListeners.removeAll()
        inheritedListeners.removeAll()
        metricsServer = nil
        statusTimer = nil
        sweepTimer = nil
        acceptRetryTimer = nil
        finishRuns()
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            disconnect(connection, reason: .shutdown)
        }
        loop.whenLingeringDone = { [unowned self] in self.loop.stop() }
        let graceTimer = LoopTimer(loop: loop) { [unowned self] in
            self.logger.warning("shutdown grace passed with \(self.loop.lingeringCount) clients unflushed")
            self.loop.dropLingeringSockets()
            self.loop.stop()
        }
        graceTimer.schedule(after: configuration.shutdownGrace)
        self.graceTimer = graceTimer
        if loop.lingeringCount == 0 { loop.stop() }
    }

    private func tearDown() {
        // Free sockets before the loop they belong to.
        finishRuns()
        connections.removeAll()
        listeners.removeAll()
        tlsListeners.removeAll()
        inheritedListeners.removeAll()
        metricsServer = nil
        signalWatchers.removeAll()
        statusTimer = nil
        watchdogTimer = nil
        sweepTimer = nil
        graceTimer = nil
        acceptRetryTimer = nil
        resumeTimer = nil
        loop.dropLingeringSockets()
        logger.notice("stopped")
    }

    private func signalReceived(_ number: Int32) {
        if isShuttingDown {
            logger.warning("second signal \(number): stopping without waiting for the grace period")
            loop.dropLingeringSockets()
            loop.stop()
            return
        }
        logger.notice("signal \(number) received")
        shutdown()
    }

    // MARK: Accepting

    private func accept(fd: Int32, peer: SocketAddress, tls: Bool = false) {
        guard connections.count < configuration.maxConnections else {
            return refuse(fd, peer: peer, "too many connections (max_connections=\(configuration.maxConnections))")
        }
        let host = peer.isUnix ? "unix" : peer.host
        if let perHost = configuration.maxConnectionsPerIP, !peer.isUnix, connectionsPerHost[host, default: 0] >= perHost {
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
            id: id, peer: peer, socket: socket, maxLine: configuration.maxLine, server: self,
            census: census
        )
        socket.delegate = connection
        // Told about drains from the first time something waits for one: a pause on its own replies, a held
        // publisher, or a publish-to-write measurement (see `ClientConnection.socketDidDrain`). Left on after
        // that: a drain notice nobody waits for does nothing.
        socket.reportsDirectDrains = false
        if !peer.isUnix {
            socket.disableNagle()
            if let keepalive = configuration.keepalive { socket.enableKeepalive(idle: keepalive) }
            if configuration.sendBufferBytes > 0 { socket.setSendBuffer(bytes: configuration.sendBufferBytes) }
        }
        socket.setTimeouts(read: configuration.idleTimeout, write: configuration.writeTimeout)
        connections[id] = connection
        connectionsPerHost[host, default: 0] += 1
        stats.accepted += 1
        if configuration.requiresAuth {
            startAuthDeadline(for: connection)
        } else {
            connection.permissions = .unrestricted
        }
        socket.write(Encoder.greeting(serverName: configuration.serverName, authRequired: configuration.requiresAuth))
        socket.enableReading()
        logger.debug("connect", metadata: ["client": "\(id)", "peer": "\(peer)"])
    }

    private func refuse(_ fd: Int32, peer: SocketAddress, _ text: String) {
        stats.limitRefusals += 1
        logger.info("refused \(peer): limit \(text)")
        RawSocket.refuse(fd, with: ProtocolError(.limit, text).line)
    }

    private func acceptFailed(_ error: SystemError) {
        // EMFILE/ENFILE leave the connection queued, so the listener would spin: pause accepting for a moment.
        logger.error("\(error); pausing accept for 1s")
        (inheritedListeners + listeners.values + tlsListeners.values).forEach { $0.pause() }
        let retry = LoopTimer(loop: loop) { [unowned self] in
            (self.inheritedListeners + self.listeners.values + self.tlsListeners.values).forEach { $0.resume() }
        }
        retry.schedule(after: .seconds(1))
        acceptRetryTimer = retry
    }

    // MARK: Disconnecting

    /// Lets go of a connection: it leaves the table (and with that every subscriber set) at once; its socket
    /// flushes a last line when the reason has one, then closes.
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason) {
        guard connection.state.handle(.close) == .tearDown else { return }
        switch reason {
        case .slowConsumer:
            stats.slowConsumers += 1
            logger.info("disconnect", metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)",
                                                 "reason": "\(reason)"])
        case .idleTimeout, .socketError, .authTimeout, .authFailures:
            logger.info("disconnect", metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)",
                                                 "reason": "\(reason)"])
        case .quit, .eof, .shutdown:
            logger.debug("disconnect", metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)",
                                                  "reason": "\(reason)"])
        }
        if let socket = connection.socket {
            if reason.flushesOutput {
                if case .slowConsumer = reason { socket.discardOutputAfterFirstLine() }
                if let farewell = reason.farewell { socket.write(farewell.line) }
                socket.closeGracefully(within: configuration.shutdownGrace)
            }
            connection.socket = nil
        }
        if !connection.heldPublishers.isEmpty { releasePublishers(heldBy: connection) }
        subscriptionCount -= connection.subscriptions.count
        staleSubscriptions += connection.subscriptions.count
        connection.authTimer = nil
        if publishRun.isOpen { retiredDuringRun.append(connection) }
        connections[connection.id] = nil
        if let count = connectionsPerHost[connection.peerHost] {
            connectionsPerHost[connection.peerHost] = count > 1 ? count - 1 : nil
        }
        // No per-subject cleanup: the weak sets no longer yield this connection. Sweeping only reclaims the
        // dead entries' memory, amortised over enough departures to cost O(1) each.
        if staleSubscriptions > max(4096, subscriptionCount) { sweepIndex() }
    }

    func sweepIndex() {
        index.sweep()
        staleSubscriptions = 0
    }
}
