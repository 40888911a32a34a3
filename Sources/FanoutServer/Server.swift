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
public final class Server: FanoutHost, SubscriptionsHost, AdminHost, MemoryGuardHost, LifecycleHost,
    HistoryUpkeepHost, DurableAcknowledgementsHost, ReplaysHost, ServerMetricsHost, QuestionHost, ClusterHost,
    ReplyOrderHost, AuthHost, HTTPFrontHost, PresenceHost, DeparturesHost {
    public internal(set) var configuration: ServerConfiguration
    var logger: Logger
    let loop: EventLoop

    /// The protocol's listeners (plain, unix, TLS, or handed over by socket activation).
    var listening = ListenerSet()
    /// The only strong owner of every client connection.
    var connections = ConnectionTable()
    let index = SubjectIndex<ClientConnection>()
    /// The engine in use, behind the one seam both engines implement: `localHistory` on a standalone server,
    /// the Redis engine on several nodes (which `cluster` owns). The read loop takes it once per read and passes
    /// it down (`execute(_:from:engine:)`): a call through this stored reference costs a retain and a release.
    /// Held by the rules of `Unretained` (which takes a class, not this existential): its owner is
    /// `localHistory` or `cluster`, and `stopCluster` points it back at `localHistory` before `cluster` lets go.
    unowned(unsafe) var engine: any Engine
    /// This process's numbering and history, in memory (and on disk with `history_dir`): the engine in use when
    /// standalone, and what publishes of this node number and retain under `history_fsync` either way.
    let localHistory: any LocalHistory
    /// Whether this server is alone (the engine in use is `localHistory`), not one of several nodes.
    var isStandalone: Bool { cluster == nil }
    /// The fan-out core: publish runs and what the publish path keeps between commands.
    let fanout = Fanout<Server>()
    /// SUB, UNSUB and QSUB, the engine's interest in them, and the index's sweep after departures.
    lazy var subscriptions = Subscriptions(host: self, index: index)
    /// WHO, and the joins and leaves of kept subjects (`presence`).
    private(set) lazy var presence = Presence(host: self)
    /// INFO, CLIENTS and CHANNELS.
    lazy var admin = Admin(host: self, index: index)
    /// What only several nodes have (questions across nodes, groups' claims, shards); nil on a standalone
    /// server.
    var cluster: ClusterNode?
    var stats = ServerStats()
    /// Each user's connections and publish bucket (max_connections_per_user, user_publish_rate).
    let userLimits = UserLimits()
    /// The server-wide memory bound (max_memory). This and the other components made with the server as their
    /// host are set at the end of `init`, once it can be one, and never nil after.
    private(set) var memory: MemoryGuard!
    /// Who each connection is and what it may do: AUTH, HTTP tokens, their deadlines and the permission checks.
    private(set) lazy var auth = Authenticator(host: self, loop: loop, settings: configuration.auth)
    /// The HTTP listener and its requests, publishes and event streams.
    private(set) lazy var http = HTTPFront(host: self, loop: loop)
    /// Signals, reload, shutdown and the service manager.
    private(set) var lifecycle: Lifecycle!
    /// Open questions (ASK), their answers, departures and timeouts.
    private(set) lazy var questions = QuestionDesk(host: self)
    /// Replies an engine that answers later still owes, kept in command order.
    private(set) lazy var replies = ReplyOrder(host: self)
    var metrics: ServerMetrics?
    /// Output held until history records are synced (`history_fsync: always`).
    private(set) var durable: DurableAcknowledgements!
    /// Peers that left by themselves, let go a slice per pass when many leave at once.
    private(set) lazy var departures = Departures(host: self)
    /// RESUME and LAST, and their replays.
    private(set) var replays: Replays!
    /// History's expiry, its figures on disk, and its clean close.
    private(set) var historyUpkeep: HistoryUpkeep!
    /// MQTT sessions by client identifier (those of clients away included) and wills.
    private(set) lazy var mqttSessions = MQTTSessions(host: self)
    /// MQTT's retained messages.
    private(set) lazy var mqttRetained = MQTTRetained(host: self)
    /// The MQTT listener's counters.
    var mqttStats = MQTTStats()

    /// Told about readiness, reloads, shutdown and status (systemd's sd_notify, in the daemon).
    public var notifier: ServiceNotifier? {
        get { lifecycle.notifier }
        set { lifecycle.notifier = newValue }
    }
    /// Reads the configuration again, for SIGHUP; nil means SIGHUP only logs that it cannot reload.
    public var configurationLoader: (() throws -> ServerConfiguration)? {
        get { lifecycle.configurationLoader }
        set { lifecycle.configurationLoader = newValue }
    }
    /// Renders the metrics registry in Prometheus text format, for `/metrics`.
    public var metricsExposition: (() -> [UInt8])? {
        get { lifecycle.metricsExposition }
        set { lifecycle.metricsExposition = newValue }
    }
    /// Sets up the metrics backend and returns its exposition; called the first time `metrics_listen` is set
    /// (at start or on a reload) while `metricsExposition` is nil, so that a server without metrics never
    /// builds a registry.
    public var metricsBackend: (() -> () -> [UInt8])? {
        get { lifecycle.metricsBackend }
        set { lifecycle.metricsBackend = newValue }
    }

    /// Creates the loop; nothing is bound until `start()`.
    public init(configuration: ServerConfiguration, logger: Logger) throws {
        let startedAt = ContinuousClock.now
        self.configuration = configuration
        self.logger = logger
        self.loop = try EventLoop()
        let localHistory = try HistoryUpkeep.open(configuration, logger: logger)
        self.localHistory = localHistory
        self.engine = localHistory
        self.logger.logLevel = configuration.logLevel
        localHistory.isSubscribed = { [index] subject in index.hasReceivers(for: subject) }
        lifecycle = Lifecycle(host: self, startedAt: startedAt)
        memory = MemoryGuard(host: self)
        durable = DurableAcknowledgements(host: self)
        replays = Replays(host: self)
        historyUpkeep = HistoryUpkeep(host: self)
        fanout.attach(to: self)
        MemoryGuard.keepHeapTop()
    }

    /// The addresses being listened on (the protocol's, then MQTT's), with the kernel's port where port 0 was
    /// asked for.
    public var boundAddresses: [String] {
        listening.all.map(\.address.description)
    }

    /// Binds every listen address (or serves `inheritedFDs`, from socket activation, instead), installs
    /// the signal handlers and timers. Throws on the first failure.
    /// `inheritedHTTPFD` is a socket handed over for `http_listen` (named "http" in LISTEN_FDNAMES),
    /// `inheritedHTTPSFD` one for `https_listen` (named "https"); `inheritedMQTTFDs` serve MQTT instead of
    /// `mqtt_listen` (named "mqtt"), `inheritedMQTTTLSFDs` MQTT over TLS instead of `mqtt_tls_listen` ("mqtts").
    public func start(inheritedFDs: [Int32] = [], inheritedHTTPFD: Int32? = nil,
                      inheritedHTTPSFD: Int32? = nil, inheritedMQTTFDs: [Int32] = [],
                      inheritedMQTTTLSFDs: [Int32] = []) throws {
        // Every connection is a descriptor: make room for max_connections plus listeners and headroom.
        let wanted = configuration.limits.maxConnections + configuration.listeners.listen.count
            + configuration.mqtt.listen.count + configuration.mqtt.tlsListen.count + 64
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
        try startMQTT(inheritedFDs: inheritedMQTTFDs, inheritedTLSFDs: inheritedMQTTTLSFDs)
        try http.start(inheritedFD: inheritedHTTPFD, inheritedTLSFD: inheritedHTTPSFD)
        try lifecycle.start()
        historyUpkeep.startExpiry()
        ClusterNode.start(for: self)
    }

    /// The TLS context for `configuration`'s certificate, key and client CA.
    func makeTLSContext(_ configuration: ServerConfiguration) throws -> TLSContext {
        try TLSContext(certificateChain: configuration.tls.certificate ?? "", privateKey: configuration.tls.key ?? "",
                       clientCA: configuration.tls.clientCA)
    }

    /// Binds one configured listen address: the line protocol's, or with `mqtt` an MQTT listener's.
    func bind(_ text: String, tls: Bool = false, mqtt: Bool = false) throws -> Listener {
        let listener = try Listener(
            loop: loop,
            address: try SocketAddress(parsing: text),
            unixMode: configuration.listeners.unixSocketMode,
            onAccept: { [unowned self] fd, peer in
                if mqtt {
                    self.acceptMQTT(fd: fd, peer: peer, tls: tls)
                } else {
                    self.accept(fd: fd, peer: peer, tls: tls)
                }
            },
            onError: { [unowned self] error in self.acceptFailed(error) }
        )
        let kind = mqtt ? " (\(Self.mqttKind(tls: tls)))" : tls ? " (tls)" : ""
        logger.notice("listening on \(listener.address)\(kind)")
        return listener
    }

    /// Serves until shutdown completes. Returns normally after a graceful stop.
    public func run() throws {
        logger.info("serving with \(loop.backendName), max_connections=\(configuration.limits.maxConnections)")
        lifecycle.announceReady()
        try loop.run()
        tearDown()
    }

    /// Stops accepting, tells every client `-ERR shutting-down`, and lets `run()` return once their output is
    /// flushed or `shutdown_grace` has passed (`Lifecycle.shutdown`).
    public func shutdown() {
        lifecycle.shutdown()
    }

    /// A reload that changed the `cluster` section starts the node again with it (`LifecycleHost`).
    func restartCluster() {
        ClusterNode.restart(for: self)
    }

    func tearDown() {
        // Free sockets before the loop they belong to.
        fanout.finish()
        // The shutdown's leaves reach history (and the engine) before the engine stops.
        presence.publishRemaining()
        cluster?.stop()
        replays.endAwaitingDrain()
        // Questions hold their askers unretained: they go first.
        questions.forgetAll()
        connections.removeAll()
        listening.tearDown()
        http.tearDown()
        lifecycle.tearDown()
        fanout.tearDown()
        localHistory.endOfRead()
        memory.tearDown()
        historyUpkeep.tearDown()
        replays.tearDown()
        subscriptions.tearDown()
        presence.tearDown()
        departures.tearDown()
        mqttSessions.tearDown()
        mqttRetained.tearDown()
        admin.tearDown()
        auth.tearDown()
        durable.tearDown()
        loop.dropLingeringSockets()
        historyUpkeep.closeDisk()
        logger.notice("stopped")
    }
}
