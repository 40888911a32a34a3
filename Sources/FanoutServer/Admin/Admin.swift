import DequeModule
import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutSubjects
import Logging

/// What the admin commands read in the server: INFO reports on every part of it, CHANNELS scans the index
/// while the asking connection's later commands are held.
protocol AdminHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var stats: ServerStats { get }
    var connections: ConnectionTable { get }
    var loop: EventLoop { get }
    /// The engine in use (its tracked subjects) and this process's (its history's figures).
    var engine: any Engine { get }
    var localHistory: any LocalHistory { get }
    /// When the server started (uptime).
    var lifecycle: Lifecycle! { get }
    /// Replays under way and waiting.
    var replays: Replays! { get }
    /// The memory bound's backlog watch and its estimate of the index.
    var memory: MemoryGuard! { get }
    /// Open questions.
    var questions: QuestionDesk { get }
    /// Several nodes: the cluster's fields.
    var cluster: ClusterNode? { get }
    /// The history disk's fields.
    var historyUpkeep: HistoryUpkeep! { get }
    /// Each connection's user (CLIENTS) and the token counters (INFO).
    var auth: Authenticator { get }
    /// The per-user limits' refusals.
    var userLimits: UserLimits { get }
    /// Kept subjects, members and events (INFO).
    var presence: Presence { get }
    var mqttStats: MQTTStats { get }
    var mqttSessions: MQTTSessions { get }
    var mqttRetained: MQTTRetained { get }
    func holdCommands(of connection: ClientConnection) -> Bool
    func releaseCommands(of connection: ClientConnection)
    /// KICK closes connections, and logs who kicked whom.
    var logger: Logger { get }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// INFO, CLIENTS, CHANNELS and KICK: what an operator asks of a running server. Listings are bounded
/// (`listingLimit`), and a CHANNELS scan goes a slice per loop pass (`Admin+Channels.swift`).
final class Admin {
    unowned let host: any AdminHost
    let index: SubjectIndex<ClientConnection>
    /// CHANNELS listings under way, oldest first, and the timer that goes on with them.
    var scans = Deque<ChannelsScan>()
    var scanTimer = SliceTimer()

    /// At most this many entries in a CHANNELS or CLIENTS line; the count before them is the total.
    static let listingLimit = 1000

    init(host: any AdminHost, index: SubjectIndex<ClientConnection>) {
        self.host = host
        self.index = index
    }

    /// INFO's fields: `name=value ...`.
    func info() -> String {
        let host = self.host
        let stats = host.stats
        let limits = host.configuration.limits
        let history = host.localHistory.historyFigures
        let backlogWatch = host.memory.backlogWatch
        let fields: [InfoFields.Field] = [
            ("version", FanoutVersion.current),
            ("server_name", host.configuration.serverName),
            ("uptime_s", (ContinuousClock.now - host.lifecycle.startedAt).components.seconds),
            ("clients", host.connections.count),
            ("connection_objects", host.connections.census.alive),
            ("subjects", index.storedPatternCount),
            ("subscriptions", host.connections.subscriptionCount),
            ("published", stats.published),
            ("delivered", stats.delivered),
            ("slow_consumers", stats.slowConsumers),
            ("backpressure_pauses", stats.backpressurePauses),
            ("limit_refusals", stats.limitRefusals),
            ("connections_total", stats.accepted),
            ("tracked_subjects", host.engine.trackedSubjects),
            ("epoch", host.engine.epoch),
            ("history_subjects", history.subjects),
            ("history_messages", history.messages),
            ("history_bytes", history.bytes),
            ("history_evicted", history.evicted),
            ("replayed", stats.replayed),
            ("replays_active", host.replays.activeCount),
            ("replays_waiting", host.replays.awaitingDrain),
            ("max_connections", limits.maxConnections),
            ("max_pending_bytes", limits.maxPendingBytes),
            ("max_memory", limits.maxMemory),
            ("backlog_bytes", backlogWatch.lastQueued),
            ("index_bytes_estimate", host.memory.indexBytes),
            ("memory_drops", backlogWatch.drops),
            ("groups", index.groupSetCount),
            ("group_deliveries", stats.groupDeliveries),
            ("group_paced_runs", stats.groupPacedRuns),
            ("binary_published", stats.binaryPublished),
            ("open_questions", host.questions.byNumber.count),
            ("questions", stats.questions),
            ("answers", stats.answers),
            ("ask_timeouts", stats.askTimeouts),
            ("token_auth", host.configuration.auth.tokens.isOn ? "on" : "off"),
            ("tokens_expired", stats.tokensExpired),
            ("token_refreshes", stats.tokenRefreshes),
            ("token_failures", stats.tokenFailures),
        ] + host.userLimits.infoFields(host.configuration.userLimits) + host.presence.infoFields()
            + host.mqttStats.infoFields(sessions: host.mqttSessions.parkedCount, retained: host.mqttRetained.count)
        return InfoFields.text(fields + InfoFields.fields((host.cluster?.infoFields() ?? []) + host.historyUpkeep.diskInfoFields()))
    }

    /// `<count> id=<n>,addr=<host:port>,subs=<n>,pending=<bytes>,age_s=<n>,transport=<tcp|tls|unix|ws>[,user=<u>]
    /// ...`, oldest first; `user=` for an authenticated connection (a users-file name or a token's `sub`).
    ///
    /// Cost: a scan of the connection table (at most max_connections ids, sorted as plain integers) and text
    /// for the `listingLimit` listed.
    func clients() -> String {
        let now = ContinuousClock.now
        let connections = host.connections
        let oldest = connections.ids.sorted().prefix(Self.listingLimit)
        let auth = host.auth
        let listed = oldest.compactMap { connections[$0] }.map { connection in
            let age = (now - connection.connectedAt).components.seconds
            return "id=\(connection.id),addr=\(connection.peer),subs=\(connection.subscriptions.count)," +
                "pending=\(connection.pendingBytes),age_s=\(age),transport=\(connection.transport)" +
                (auth.userName(of: connection).map { ",user=\(PresenceMember.listable($0))" } ?? "")
        }
        return ([String(connections.count)] + listed).joined(separator: " ")
    }


    func tearDown() {
        scanTimer.tearDown()
        scans.removeAll()
    }
}
