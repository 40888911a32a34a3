import FanoutEngine
import FanoutEventLoop
import FanoutHTTP
import FanoutSubjects
import Logging

/// What the lifecycle needs from the server: what a reload changes (the configuration and every part that
/// follows it) and what a shutdown stops (listeners, the HTTP front, connections, the loop).
protocol LifecycleHost: AnyObject {
    var configuration: ServerConfiguration { get set }
    var logger: Logger { get set }
    var loop: EventLoop { get }
    var stats: ServerStats { get }
    var connections: ConnectionTable { get }
    var index: SubjectIndex<ClientConnection> { get }
    var listening: ListenerSet { get set }
    var http: HTTPFront { get }
    var auth: Authenticator { get }
    var subscriptions: Subscriptions { get }
    var presence: Presence { get }
    var engine: any Engine { get }
    var localHistory: any LocalHistory { get }
    var isStandalone: Bool { get }
    var historyUpkeep: HistoryUpkeep! { get }
    var durable: DurableAcknowledgements! { get }
    func bind(_ text: String, tls: Bool, mqtt: Bool) throws -> Listener
    func makeTLSContext(_ configuration: ServerConfiguration) throws -> TLSContext
    func restartCluster()
    func updateReadTimeout(of connection: ClientConnection)
    func readEnded()
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// The server's life: its signals (SIGTERM and SIGINT stop it, SIGHUP reloads it), the service manager's
/// status lines and watchdog, reloading (`Lifecycle+Reload.swift`) and the shutdown with its grace period
/// (`Lifecycle+Shutdown.swift`).
final class Lifecycle {
    unowned let host: any LifecycleHost
    /// When the server was made: uptime, and connections' times, count from here.
    let startedAt: ContinuousClock.Instant
    /// What the daemon plugs in: the service manager, reloading, and the metrics backend.
    var notifier: ServiceNotifier?
    var configurationLoader: (() throws -> ServerConfiguration)?
    var metricsExposition: (() -> [UInt8])?
    var metricsBackend: (() -> () -> [UInt8])?
    var signalWatchers: [SignalWatcher] = []
    var statusTimer: LoopTimer?
    var watchdogTimer: LoopTimer?
    var graceTimer: LoopTimer?
    /// Polls, while stopping, for presence's last leaves to be published and answered.
    var quietTimer: LoopTimer?
    var publishedAtLastStatus: UInt64 = 0
    var isShuttingDown = false

    init(host: any LifecycleHost, startedAt: ContinuousClock.Instant) {
        self.host = host
        self.startedAt = startedAt
    }

    /// Installs the signal handlers and, when a service manager listens, the status and watchdog timers.
    func start() throws {
        for signal in [SignalNumber.terminate, SignalNumber.interrupt] {
            signalWatchers.append(try SignalWatcher(loop: host.loop, signal: signal) { [unowned self] number in
                self.signalReceived(number)
            })
        }
        signalWatchers.append(try SignalWatcher(loop: host.loop, signal: SignalNumber.hangup) { [unowned self] _ in
            self.reload()
        })
        startServiceTimers()
    }

    /// Tells the service manager that the server serves (after start and after each reload).
    func announceReady() {
        notifier?.ready(status: statusLine(rate: 0))
    }

    /// Periodic STATUS= lines and watchdog keep-alives, when a service manager listens.
    private func startServiceTimers() {
        guard let notifier else { return }
        let interval = Duration.seconds(2)
        let statusTimer = LoopTimer(loop: host.loop, repeating: true) { [unowned self] in
            let published = self.host.stats.published
            let rate = Double(published - self.publishedAtLastStatus) / 2
            self.publishedAtLastStatus = published
            notifier.status(self.statusLine(rate: rate))
        }
        statusTimer.schedule(after: interval)
        self.statusTimer = statusTimer
        if let watchdogInterval = notifier.watchdogInterval {
            let watchdogTimer = LoopTimer(loop: host.loop, repeating: true) { notifier.watchdog() }
            watchdogTimer.schedule(after: watchdogInterval)
            self.watchdogTimer = watchdogTimer
            host.logger.info("watchdog keep-alive every \(watchdogInterval)")
        }
    }

    func statusLine(rate: Double) -> String {
        "clients=\(host.connections.count) subjects=\(host.index.storedPatternCount) msgs/s=\(Int(rate.rounded()))"
    }

    func tearDown() {
        signalWatchers.removeAll()
        statusTimer = nil
        watchdogTimer = nil
        graceTimer = nil
        quietTimer = nil
    }
}
