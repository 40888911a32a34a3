import DequeModule
import FanoutEngine
import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol
import FanoutSubjects
import Logging

/// The pub/sub server: one libevent loop, its listeners, the connection table and the subject index.
///
/// Threading: every method runs on the thread that calls `run()`; nothing here is locked or `Sendable`.
/// Create the server on that thread too.
public final class Server: AuthHost, HTTPFrontHost {
    public internal(set) var configuration: ServerConfiguration
    var logger: Logger
    let loop: EventLoop

    /// The protocol's listeners (plain, unix, TLS, or handed over by socket activation).
    var listening = ListenerSet()
    /// The only strong owner of every client connection.
    var connections = ConnectionTable()
    let index = SubjectIndex<ClientConnection>()
    /// The engine in use, behind the one seam both engines implement: `local`, or the Redis engine on several
    /// nodes (which `cluster` owns). The read loop takes it once per read and passes it down
    /// (`execute(_:from:engine:)`): a call through this stored reference costs a retain and a release.
    unowned(unsafe) var engine: any Engine
    /// This process's engine: numbering and history in memory (and on disk with `history_dir`).
    let local: any LocalHistory
    /// The fan-out core: publish runs and what the publish path keeps between commands.
    let fanout = Fanout()
    /// What only several nodes have (questions across nodes, groups' claims, shards); nil on a standalone
    /// server.
    var cluster: ClusterNode?
    var stats = ServerStats()
    /// The server-wide memory bound (max_memory).
    var memory = MemoryGuard()
    /// Who each connection is and what it may do: AUTH, HTTP tokens, their deadlines and the permission checks.
    private(set) lazy var auth = Authenticator(host: self, loop: loop, settings: configuration.auth)
    /// Work done a slice per loop pass, with its timers.
    var work = SlicedWork()
    /// The HTTP listener and its requests, publishes and event streams.
    private(set) lazy var http = HTTPFront(host: self, loop: loop)
    var lifecycle = Lifecycle()
    /// Open questions (ASK), their answers' routes and timeouts.
    var questions = QuestionTable()
    var metrics: ServerMetrics?
    /// Output held until history records are synced (`history_fsync: always`).
    var durableAcknowledgements = DurableAcknowledgements()
    private var hooks = ServerHooks()

    /// Told about readiness, reloads, shutdown and status (systemd's sd_notify, in the daemon).
    public var notifier: ServiceNotifier? {
        get { hooks.notifier }
        set { hooks.notifier = newValue }
    }
    /// Reads the configuration again, for SIGHUP; nil means SIGHUP only logs that it cannot reload.
    public var configurationLoader: (() throws -> ServerConfiguration)? {
        get { hooks.configurationLoader }
        set { hooks.configurationLoader = newValue }
    }
    /// Renders the metrics registry in Prometheus text format, for `/metrics`.
    public var metricsExposition: (() -> [UInt8])? {
        get { hooks.metricsExposition }
        set { hooks.metricsExposition = newValue }
    }
    /// Sets up the metrics backend and returns its exposition; called the first time `metrics_listen` is set
    /// (at start or on a reload) while `metricsExposition` is nil, so that a server without metrics never
    /// builds a registry.
    public var metricsBackend: (() -> () -> [UInt8])? {
        get { hooks.metricsBackend }
        set { hooks.metricsBackend = newValue }
    }

    /// Creates the loop; nothing is bound until `start()`.
    public init(configuration: ServerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.loop = try EventLoop()
        let local = try Self.makeEngine(configuration, logger: logger)
        self.local = local
        self.engine = local
        self.logger.logLevel = configuration.logLevel
        local.isSubscribed = { [index] subject in index.hasReceivers(for: subject) }
        fanout.owner = self
        Self.keepHeapTop()
    }

    /// The addresses being listened on, with the kernel's port where port 0 was asked for.
    public var boundAddresses: [String] {
        listening.all.map(\.address.description)
    }

    /// Binds every listen address (or serves `inheritedFDs`, from socket activation, instead), installs
    /// the signal handlers and timers. Throws on the first failure.
    /// `inheritedHTTPFD` is a socket handed over for `http_listen` (named "http" in LISTEN_FDNAMES).
    public func start(inheritedFDs: [Int32] = [], inheritedHTTPFD: Int32? = nil) throws {
        // Every connection is a descriptor: make room for max_connections plus listeners and headroom.
        let wanted = configuration.limits.maxConnections + configuration.listeners.listen.count + 64
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
            listening.inherited.append(listener)
            logger.notice("listening on \(listener.address) (socket activation)")
        }
        if listening.inherited.isEmpty {
            for text in configuration.listeners.listen { listening.plain[text] = try bind(text) }
        }
        if !configuration.tls.listen.isEmpty {
            listening.tlsContext = try makeTLSContext(configuration)
            for text in configuration.tls.listen { listening.tls[text] = try bind(text, tls: true) }
        }
        try http.start(inheritedFD: inheritedHTTPFD)
        for signal in [SignalNumber.terminate, SignalNumber.interrupt] {
            lifecycle.signalWatchers.append(try SignalWatcher(loop: loop, signal: signal) { [unowned self] number in
                self.signalReceived(number)
            })
        }
        lifecycle.signalWatchers.append(try SignalWatcher(loop: loop, signal: SignalNumber.hangup) { [unowned self] _ in
            self.reload()
        })
        startServiceTimers()
        startHistoryExpiry()
        startCluster()
    }

    /// The TLS context for `configuration`'s certificate, key and client CA.
    func makeTLSContext(_ configuration: ServerConfiguration) throws -> TLSContext {
        try TLSContext(certificateChain: configuration.tls.certificate ?? "", privateKey: configuration.tls.key ?? "",
                       clientCA: configuration.tls.clientCA)
    }

    /// Binds one configured listen address.
    func bind(_ text: String, tls: Bool = false) throws -> Listener {
        let listener = try Listener(
            loop: loop,
            address: try SocketAddress(parsing: text),
            unixMode: configuration.listeners.unixSocketMode,
            onAccept: { [unowned self] fd, peer in self.accept(fd: fd, peer: peer, tls: tls) },
            onError: { [unowned self] error in self.acceptFailed(error) }
        )
        logger.notice("listening on \(listener.address)\(tls ? " (tls)" : "")")
        return listener
    }

    /// Serves until shutdown completes. Returns normally after a graceful stop.
    public func run() throws {
        logger.info("serving with \(loop.backendName), max_connections=\(configuration.limits.maxConnections)")
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
            let rate = Double(published - self.lifecycle.publishedAtLastStatus) / 2
            self.lifecycle.publishedAtLastStatus = published
            notifier.status(self.statusLine(rate: rate))
        }
        statusTimer.schedule(after: interval)
        lifecycle.statusTimer = statusTimer
        if let watchdogInterval = notifier.watchdogInterval {
            let watchdogTimer = LoopTimer(loop: loop, repeating: true) { notifier.watchdog() }
            watchdogTimer.schedule(after: watchdogInterval)
            lifecycle.watchdogTimer = watchdogTimer
            logger.info("watchdog keep-alive every \(watchdogInterval)")
        }
    }

    func statusLine(rate: Double) -> String {
        "clients=\(connections.count) subjects=\(index.storedPatternCount) msgs/s=\(Int(rate.rounded()))"
    }

    func tearDown() {
        // Free sockets before the loop they belong to.
        fanout.finish()
        stopCluster()
        // A replay waiting for its client to read is in no queue: it ends here, letting go of its connection.
        for connection in connections.values where connection.extras?.replayJob?.awaitingDrain == true {
            connection.extras?.replayJob?.end()
        }
        work.replaysAwaitingDrain = 0
        // Questions hold their askers unretained: they go first.
        forgetQuestions()
        connections.removeAll()
        listening.tearDown()
        http.tearDown()
        lifecycle.tearDown()
        fanout.tearDown()
        local.endOfRead()
        memory.tearDown()
        work.tearDown()
        auth.tearDown()
        durableAcknowledgements.tearDown()
        loop.dropLingeringSockets()
        closeHistoryDisk()
        logger.notice("stopped")
    }
}
