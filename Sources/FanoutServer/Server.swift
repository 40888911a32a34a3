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
public final class Server {
    public internal(set) var configuration: ServerConfiguration
    var logger: Logger
    let loop: EventLoop
    let startedAt = ContinuousClock.now

    /// Listeners bound from `configuration.listeners.listen`, by the address text that asked for them.
    var listeners: [String: Listener] = [:]
    /// TLS listeners from `configuration.tls.listen`, and the context their connections get.
    var tlsListeners: [String: Listener] = [:]
    var tlsContext: TLSContext?
    /// Listeners handed over by socket activation; while there are any, `listen` is not bound.
    var inheritedListeners: [Listener] = []
    /// The only strong owner of every client connection.
    var connections: [UInt64: ClientConnection] = [:]
    var nextConnectionID: UInt64 = 1
    let index = SubjectIndex<ClientConnection>()
    /// Numbers each subject's messages (and will keep history): the in-memory engine, embedded.
    let engine: MemoryEngine
    var publishRun = PublishRun()
    /// The Redis engine and its per-connection state, with a `cluster` section; nil on a standalone server.
    var cluster: ClusterNode?
    /// Connections dropped while a publish run was open, kept alive until it closes: the run refers to its
    /// receivers unretained.
    var retiredDuringRun: [ClientConnection] = []
    var stats = ServerStats()
    /// Connections with large backlogs, for the server-wide memory bound (max_memory).
    var backlogWatch = BacklogWatch()
    /// Failed-AUTH buckets per address, their log, and the unauthenticated connections' count.
    var authGate = AuthGate()
    /// Refused connections, logged once per interval at most.
    var refusalLog: LogThrottle?
    /// Queued output freed by slow-consumer drops since the allocator was last asked to give memory back.
    var freedSinceTrim = 0
    var trimTimer: LoopTimer?
    var memoryTimer: LoopTimer?
    /// Ages out retained messages while any subject keeps history.
    var historyTimer: LoopTimer?
    /// Live connection objects: equal to `connections.count` between callbacks, or something leaks.
    let census = ObjectCensus()
    /// Subscriptions held by live connections.
    var subscriptionCount = 0
    /// Whether any configured user has subscribe-deny patterns: only then are a run's receivers filtered.
    /// Kept in step with `configuration` (init and reload) so that opening a run does not scan the users.
    var anyUserWithholds = false
    /// Each user's permissions as the one object its connections share (refreshed when a reload changes them).
    var permissionsByUser: [String: SharedPermissions] = [:]
    /// Live connections per peer host, for max_connections_per_ip.
    var connectionsPerHost: [String: Int] = [:]
    /// Subscriptions left behind (dead members, emptied sets) since the last sweep of the index.
    var staleSubscriptions = 0
    /// Publishers no longer held back by any subscriber, to be read again on the next pass.
    var releasedPublishers: [UInt64] = []
    var resumeTimer: LoopTimer?
    /// A publish run's lines framed for its WebSocket receivers, reused from run to run.
    var webSocketFrames: [UInt8] = []
    /// HTTP publishes waiting for an engine's answer (several nodes), kept alive until it comes.
    var httpPublishers: [UInt64: ClientConnection] = [:]
    /// Sends Server-Sent Events streams their keep-alive comments.
    var eventStreamTimer: LoopTimer?

    var signalWatchers: [SignalWatcher] = []
    /// Runs the index's sweep in slices while departures left anything stale.
    var sweepTimer: LoopTimer?
    /// `staleSubscriptions` when the sweep's current cycle began: what a finished cycle has certainly reclaimed.
    var staleAtCycleStart = 0
    /// CHANNELS listings under way, oldest first, and the timer that continues them.
    var channelScans = Deque<ChannelsScan>()
    var channelsTimer: LoopTimer?
    /// SUBs and UNSUBs of many patterns under way, and the timer that continues them.
    var subscriptionJobs = Deque<SubscriptionJob>()
    var subscriptionTimer: LoopTimer?
    /// Replays (RESUME, LAST) being sent a slice per loop pass, and the timer that continues them.
    var replayJobs = Deque<ReplayJob>()
    var replayTimer: LoopTimer?
    /// Scratch for encoding a replay's slices.
    var replayScratch: [UInt8] = []
    /// Connections whose turn ended with commands left, to go on with on the next pass.
    var waitingTurns: [UInt64] = []
    var turnTimer: LoopTimer?
    /// Bytes queued to clients when the memory bound was last checked.
    var bytesOutAtMemoryCheck: UInt64 = 0
    var acceptRetryTimer: LoopTimer?
    var graceTimer: LoopTimer?
    var statusTimer: LoopTimer?
    var watchdogTimer: LoopTimer?
    /// The HTTP listener (http_listen), or the one socket activation handed over for it.
    var httpListener: Listener?
    var inheritedHTTPListener: Listener?
    /// HTTP connections reading their request, by id (the id a WebSocket upgrade keeps).
    var httpExchanges: [UInt64: HTTPExchange] = [:]
    /// HTTP connections reading their request, per peer host, for max_connections_per_ip.
    var httpExchangesPerHost: [String: Int] = [:]
    var metrics: ServerMetrics?
    var publishedAtLastStatus: UInt64 = 0
    var isShuttingDown = false

    /// Told about readiness, reloads, shutdown and status (systemd's sd_notify, in the daemon).
    public var notifier: ServiceNotifier?
    /// Reads the configuration again, for SIGHUP; nil means SIGHUP only logs that it cannot reload.
    public var configurationLoader: (() throws -> ServerConfiguration)?
    /// Renders the metrics registry in Prometheus text format, for `/metrics`.
    public var metricsExposition: (() -> [UInt8])?
    /// Sets up the metrics backend and returns its exposition; called the first time `metrics_listen` is set
    /// (at start or on a reload) while `metricsExposition` is nil, so that a server without metrics never
    /// builds a registry.
    public var metricsBackend: (() -> () -> [UInt8])?

    /// Creates the loop; nothing is bound until `start()`.
    public init(configuration: ServerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.loop = try EventLoop()
        self.engine = MemoryEngine(subjectLimit: configuration.limits.maxTrackedSubjects,
                                   history: configuration.history.rules, historyMaxBytes: configuration.history.maxBytes)
        self.logger.logLevel = configuration.logLevel
        self.anyUserWithholds = Self.withholds(configuration)
        engine.isSubscribed = { [index] subject in index.hasReceivers(for: subject) }
        Self.keepHeapTop()
    }

    static func withholds(_ configuration: ServerConfiguration) -> Bool {
        configuration.auth.users.contains { !$0.permissions.subscribeDeny.isEmpty }
    }

    /// The addresses being listened on, with the kernel's port where port 0 was asked for.
    public var boundAddresses: [String] {
        (inheritedListeners + listeners.values + tlsListeners.values).map(\.address.description)
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
            inheritedListeners.append(listener)
            logger.notice("listening on \(listener.address) (socket activation)")
        }
        if inheritedListeners.isEmpty {
            for text in configuration.listeners.listen { listeners[text] = try bind(text) }
        }
        if !configuration.tls.listen.isEmpty {
            tlsContext = try makeTLSContext(configuration)
            for text in configuration.tls.listen { tlsListeners[text] = try bind(text, tls: true) }
        }
        try startHTTP(inheritedFD: inheritedHTTPFD)
        for signal in [SignalNumber.terminate, SignalNumber.interrupt] {
            signalWatchers.append(try SignalWatcher(loop: loop, signal: signal) { [unowned self] number in
                self.signalReceived(number)
            })
        }
        signalWatchers.append(try SignalWatcher(loop: loop, signal: SignalNumber.hangup) { [unowned self] _ in
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

    func tearDown() {
        // Free sockets before the loop they belong to.
        finishRuns()
        stopCluster()
        connections.removeAll()
        listeners.removeAll()
        tlsListeners.removeAll()
        inheritedListeners.removeAll()
        httpListener = nil
        inheritedHTTPListener = nil
        httpExchanges.removeAll()
        httpExchangesPerHost.removeAll()
        eventStreamTimer = nil
        signalWatchers.removeAll()
        statusTimer = nil
        watchdogTimer = nil
        sweepTimer = nil
        graceTimer = nil
        acceptRetryTimer = nil
        resumeTimer = nil
        memoryTimer = nil
        trimTimer = nil
        historyTimer = nil
        channelsTimer = nil
        channelScans.removeAll()
        subscriptionTimer = nil
        turnTimer = nil
        subscriptionJobs.removeAll()
        replayTimer = nil
        while let job = replayJobs.popFirst() { job.end() }
        authGate.failureLog = nil
        refusalLog = nil
        loop.dropLingeringSockets()
        logger.notice("stopped")
    }
}
