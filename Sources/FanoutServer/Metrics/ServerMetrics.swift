import FanoutEngine
import Metrics

/// The server's metrics, published through swift-metrics (the daemon bootstraps a Prometheus backend).
///
/// The hot path only bumps plain counters in `ServerStats`; `sync` moves the differences into the metrics
/// system when `/metrics` is read, so no publish pays for an atomic or a lock.
final class ServerMetrics {
    private let connections = Gauge(label: "fanout_connections")
    private let subscriptions = Gauge(label: "fanout_subscriptions")
    private let subjects = Gauge(label: "fanout_subjects")
    private let pendingOutput = Gauge(label: "fanout_pending_output_bytes")
    private let published = Counter(label: "fanout_published_total")
    private let delivered = Counter(label: "fanout_delivered_total")
    private let bytesIn = Counter(label: "fanout_bytes_in_total")
    private let bytesOut = Counter(label: "fanout_bytes_out_total")
    private let slowConsumers = Counter(label: "fanout_slow_consumer_disconnects_total")
    private let limitRefusals = Counter(label: "fanout_limit_refusals_total")
    private let replayed = Counter(label: "fanout_replayed_total")
    private let memoryDrops = Counter(label: "fanout_memory_bound_drops_total")
    private let historySubjects = Gauge(label: "fanout_history_subjects")
    private let historyMessages = Gauge(label: "fanout_history_messages")
    private let historyBytes = Gauge(label: "fanout_history_bytes")
    private let historyEvicted = Counter(label: "fanout_history_evicted_total")
    private let groups = Gauge(label: "fanout_groups")
    private let openQuestions = Gauge(label: "fanout_open_questions")
    private let groupDeliveries = Counter(label: "fanout_group_deliveries_total")
    private let groupPacedRuns = Counter(label: "fanout_group_paced_runs_total")
    private let questions = Counter(label: "fanout_questions_total")
    private let answers = Counter(label: "fanout_answers_total")
    private let askTimeouts = Counter(label: "fanout_ask_timeouts_total")
    private var reportedMemoryDrops: UInt64 = 0
    private var reportedHistoryEvicted: UInt64 = 0
    /// From a message being queued to a connection until that connection's output has been written out.
    let publishToWrite = Metrics.Timer(label: "fanout_publish_to_write_seconds")
    private var reported = ServerStats()

    func sync(_ stats: ServerStats, clients: Int, subscriptionCount: Int, subjectCount: Int, pendingBytes: Int) {
        connections.record(clients)
        subscriptions.record(subscriptionCount)
        subjects.record(subjectCount)
        pendingOutput.record(pendingBytes)
        published.increment(by: Int64(stats.published - reported.published))
        delivered.increment(by: Int64(stats.delivered - reported.delivered))
        bytesIn.increment(by: Int64(stats.bytesIn - reported.bytesIn))
        bytesOut.increment(by: Int64(stats.bytesOut - reported.bytesOut))
        slowConsumers.increment(by: Int64(stats.slowConsumers - reported.slowConsumers))
        limitRefusals.increment(by: Int64(stats.limitRefusals - reported.limitRefusals))
        replayed.increment(by: Int64(stats.replayed - reported.replayed))
        groupDeliveries.increment(by: Int64(stats.groupDeliveries - reported.groupDeliveries))
        groupPacedRuns.increment(by: Int64(stats.groupPacedRuns - reported.groupPacedRuns))
        questions.increment(by: Int64(stats.questions - reported.questions))
        answers.increment(by: Int64(stats.answers - reported.answers))
        askTimeouts.increment(by: Int64(stats.askTimeouts - reported.askTimeouts))
        reported = stats
    }

    /// Groups and open questions, as INFO shows them.
    func sync(groups groupCount: Int, openQuestions open: Int) {
        groups.record(groupCount)
        openQuestions.record(open)
    }

    /// The memory bound's drops and the engine's history, beside the counters above.
    func sync(memoryDrops drops: UInt64, history: HistoryFigures) {
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

    func sync(disk: DiskFigures) {
        historyDiskBytes.record(disk.bytes)
        historyFsyncLag.record(disk.fsyncLagMilliseconds)
        historyWriteQueue.record(disk.writeQueue)
        historyWriteDropped.increment(by: Int64(disk.writeDropped - reportedWriteDropped))
        reportedWriteDropped = disk.writeDropped
    }
}
