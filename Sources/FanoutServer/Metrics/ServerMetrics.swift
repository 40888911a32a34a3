import FanoutEngine
import FanoutSubjects
import Metrics

/// What the metrics read from the server when `/metrics` is asked for: its counters and what it holds.
protocol ServerMetricsHost: AnyObject {
    var stats: ServerStats { get }
    var connections: ConnectionTable { get }
    var index: SubjectIndex<ClientConnection> { get }
    var memory: MemoryGuard! { get }
    var localHistory: any LocalHistory { get }
    var questions: QuestionDesk { get }
    var userLimits: UserLimits { get }
    var mqttStats: MQTTStats { get }
    var mqttSessions: MQTTSessions { get }
    var mqttRetained: MQTTRetained { get }
}

/// The server's metrics, published through swift-metrics (the daemon bootstraps a Prometheus backend).
///
/// The hot path only bumps plain counters in `ServerStats`; `sync` moves the differences into the metrics
/// system when `/metrics` is read, so no publish pays for an atomic or a lock.
final class ServerMetrics {
    private let connections = Gauge(label: "fanout_connections")
    private let subscriptions = Gauge(label: "fanout_subscriptions")
    private let subjects = Gauge(label: "fanout_subjects")
    private let pendingOutput = Gauge(label: "fanout_pending_output_bytes")
    /// Counters that follow a field of `ServerStats`, each with its field (made in this order, as before the
    /// gauges below).
    private let counted: [(counter: Counter, field: KeyPath<ServerStats, UInt64>)] = [
        (Counter(label: "fanout_published_total"), \.published),
        (Counter(label: "fanout_delivered_total"), \.delivered),
        (Counter(label: "fanout_bytes_in_total"), \.bytesIn),
        (Counter(label: "fanout_bytes_out_total"), \.bytesOut),
        (Counter(label: "fanout_slow_consumer_disconnects_total"), \.slowConsumers),
        (Counter(label: "fanout_limit_refusals_total"), \.limitRefusals),
        (Counter(label: "fanout_replayed_total"), \.replayed),
    ]
    private let memoryDrops = Counter(label: "fanout_memory_bound_drops_total")
    private let historySubjects = Gauge(label: "fanout_history_subjects")
    private let historyMessages = Gauge(label: "fanout_history_messages")
    private let historyBytes = Gauge(label: "fanout_history_bytes")
    private let historyEvicted = Counter(label: "fanout_history_evicted_total")
    private let groups = Gauge(label: "fanout_groups")
    private let openQuestions = Gauge(label: "fanout_open_questions")
    /// More counters that follow a field of `ServerStats`, made after the gauges above.
    private let countedAfterGauges: [(counter: Counter, field: KeyPath<ServerStats, UInt64>)] = [
        (Counter(label: "fanout_group_deliveries_total"), \.groupDeliveries),
        (Counter(label: "fanout_group_paced_runs_total"), \.groupPacedRuns),
        (Counter(label: "fanout_questions_total"), \.questions),
        (Counter(label: "fanout_answers_total"), \.answers),
        (Counter(label: "fanout_ask_timeouts_total"), \.askTimeouts),
        (Counter(label: "fanout_tokens_expired_total"), \.tokensExpired),
        (Counter(label: "fanout_token_refreshes_total"), \.tokenRefreshes),
        (Counter(label: "fanout_token_failures_total"), \.tokenFailures),
    ]
    private var reportedMemoryDrops: UInt64 = 0
    /// max_connections_per_user and user_publish_rate refusals; made on the first read of `/metrics`.
    private lazy var userLimitRefusals = UserLimits.Metrics()
    /// The MQTT listener's series (present, at 0, on a server without one); made on the first read of `/metrics`.
    private lazy var mqtt = MQTTStats.Metrics()
    private var reportedHistoryEvicted: UInt64 = 0
    /// From a message being queued to a connection until that connection's output has been written out.
    let publishToWrite = Metrics.Timer(label: "fanout_publish_to_write_seconds")
    private var reported = ServerStats()

    /// Brings every metric up to date with `host`, for a read of `/metrics`.
    func sync(from host: any ServerMetricsHost) {
        let history = host.localHistory
        if let disk = history.diskFigures { sync(disk: disk) }
        let connections = host.connections
        sync(host.stats, clients: connections.count, subscriptionCount: connections.subscriptionCount,
             subjectCount: host.index.storedPatternCount,
             pendingBytes: connections.values.reduce(0) { $0 + $1.pendingBytes })
        sync(memoryDrops: host.memory.backlogWatch.drops, history: history.historyFigures)
        sync(groups: host.index.groupSetCount, openQuestions: host.questions.byNumber.count)
        userLimitRefusals.sync(host.userLimits)
        mqtt.sync(host.mqttStats, sessions: host.mqttSessions.parkedCount, retained: host.mqttRetained.count)
    }

    private func sync(_ stats: ServerStats, clients: Int, subscriptionCount: Int, subjectCount: Int, pendingBytes: Int) {
        connections.record(clients)
        subscriptions.record(subscriptionCount)
        subjects.record(subjectCount)
        pendingOutput.record(pendingBytes)
        for (counter, field) in counted + countedAfterGauges {
            counter.increment(by: Int64(stats[keyPath: field] - reported[keyPath: field]))
        }
        reported = stats
    }

    /// Groups and open questions, as INFO shows them.
    private func sync(groups groupCount: Int, openQuestions open: Int) {
        groups.record(groupCount)
        openQuestions.record(open)
    }

    /// The memory bound's drops and the engine's history, beside the counters above.
    private func sync(memoryDrops drops: UInt64, history: HistoryFigures) {
        memoryDrops.increment(by: Int64(drops - reportedMemoryDrops))
        reportedMemoryDrops = drops
        historySubjects.record(history.subjects)
        historyMessages.record(history.messages)
        historyBytes.record(history.bytes)
        historyEvicted.increment(by: Int64(history.evicted - reportedHistoryEvicted))
        reportedHistoryEvicted = history.evicted
    }

    // History on disk (history_dir), as INFO shows it; made the first time a server with a directory is read.
    private lazy var historyDiskBytes = Gauge(label: "fanout_history_disk_bytes")
    private lazy var historyFsyncLag = Gauge(label: "fanout_history_fsync_lag_ms")
    private lazy var historyWriteQueue = Gauge(label: "fanout_history_write_queue")
    private lazy var historyWriteDropped = Counter(label: "fanout_history_write_dropped_total")
    private var reportedWriteDropped: UInt64 = 0

    private func sync(disk: DiskFigures) {
        historyDiskBytes.record(disk.bytes)
        historyFsyncLag.record(disk.fsyncLagMilliseconds)
        historyWriteQueue.record(disk.writeQueue)
        historyWriteDropped.increment(by: Int64(disk.writeDropped - reportedWriteDropped))
        reportedWriteDropped = disk.writeDropped
    }
}
