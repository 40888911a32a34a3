import FanoutEventLoop
import Logging

/// What the memory guard needs from the server: the bound and the logger, the counters it reads and bumps,
/// the connections and open questions it weighs, and dropping a connection.
protocol MemoryGuardHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var loop: EventLoop { get }
    var stats: ServerStats { get set }
    var connections: ConnectionTable { get }
    var questions: QuestionDesk { get }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// The server-wide memory bound, `max_memory`: queued output, the subject index and open questions, and the
/// BPUB payloads, WebSocket binary messages and `POST /publish` bodies being read. Per-connection limits
/// (max_pending_bytes, max_subscriptions, max_payload) bound one client; this bounds all of them together.
///
/// Over the bound, the connections with the largest queued output are dropped first, as slow consumers
/// (`-ERR slow-consumer`), until queued output is back under nine tenths of what the bound leaves it; new
/// subscriptions are refused with `-ERR limit` while the index alone is over the bound, and a BPUB header
/// whose payload would pass it is refused with `-ERR limit` (its bytes are read and dropped).
///
/// Worst case: a check is O(watched + holders) and a drop O(n · log n) over them, each at most
/// max_connections; both run only on the bound's timer or past a thirty-second of it, never per publish.
final class MemoryGuard {
    /// How often the bound is checked: often enough that 10,000 stalled readers cannot overshoot it by more
    /// than what they queue in this time.
    static let checkInterval = Duration.milliseconds(100)

    unowned let host: any MemoryGuardHost
    var backlogWatch = BacklogWatch()
    /// Queued output freed by slow-consumer drops since the allocator was last asked to give memory back.
    var freedSinceTrim = 0
    var trimTimer: LoopTimer?
    var checkTimer: LoopTimer?
    /// Bytes queued to clients when the bound was last checked.
    var bytesOutAtCheck: UInt64 = 0
    /// Bytes promised to input not yet whole: a BPUB payload at its announced length from its header on, a
    /// WebSocket binary message's buffer as a frame's header asks it to grow, a `POST /publish` body at its
    /// Content-Length; until published or their connection goes. At most max_memory: what would pass it is
    /// refused (`reservePayload`).
    var payloadBytes = 0
    /// Of those, the bytes that have arrived: what the bound's drops weigh, so that promises with no bytes
    /// behind them never get a subscriber dropped.
    var payloadReceived = 0
    /// Per connection with an unfinished payload or message, by id, what it was promised and what has arrived:
    /// at most max_connections entries, none for a connection that holds nothing.
    var payloads: [UInt64: PayloadHold] = [:]
    /// `payloadReceived` when the bound was last checked: a check comes sooner when payloads grow fast.
    var payloadReceivedAtCheck = 0

    init(host: any MemoryGuardHost) {
        self.host = host
    }

    func tearDown() {
        trimTimer = nil
        checkTimer = nil
    }

    /// Called from the fan-out when a receiver's backlog passes `BacklogWatch.mark`.
    func watchBacklog(of connection: ClientConnection) {
        let bound = host.configuration.limits.maxMemory
        guard bound > 0 else { return }
        if !connection.isBacklogWatched {
            connection.isBacklogWatched = true
            backlogWatch.watched.insert(connection.id)
            if checkTimer?.isScheduled != true { startChecks() }
        }
        // Between timer checks, a fast publisher could queue far past the bound: check as soon as a
        // thirty-second of it has been queued since the last check.
        if host.stats.bytesOut &- bytesOutAtCheck > UInt64(bound / 32) { check() }
    }

    private func startChecks() {
        if checkTimer == nil {
            checkTimer = LoopTimer(loop: host.loop) { [unowned self] in self.check() }
        }
        checkTimer?.schedule(after: Self.checkInterval)
    }

    /// The index's estimated heap bytes, with the open questions'.
    var indexBytes: Int {
        host.connections.subscriptionCount * IndexMemory.bytesPerSubscription + host.questions.bytes
    }

    /// Whether holding `bytes` more (an ASK's question and pushes) would pass max_memory.
    func refuses(adding bytes: Int) -> Bool {
        let bound = host.configuration.limits.maxMemory
        return bound > 0 && indexBytes + bytes > bound
    }

    /// Whether a subscription of `count` more patterns would pass max_memory.
    func indexWouldPassBound(adding count: Int) -> Bool {
        let bound = host.configuration.limits.maxMemory
        return bound > 0 && indexBytes + count * IndexMemory.bytesPerSubscription > bound
    }

    /// Sums the watched backlogs, forgets the ones that drained or left, and drops the largest while over.
    func check() {
        bytesOutAtCheck = host.stats.bytesOut
        payloadReceivedAtCheck = payloadReceived
        var queued = 0
        var backlogs: [(pending: Int, connection: ClientConnection)] = []
        for id in backlogWatch.watched {
            guard let connection = host.connections[id], case let pending = connection.pendingBytes,
                  pending > BacklogWatch.mark / 2 else {
                backlogWatch.watched.remove(id)
                host.connections[id]?.isBacklogWatched = false
                continue
            }
            queued += pending
            backlogs.append((pending, connection))
        }
        backlogWatch.lastQueued = queued
        let bound = host.configuration.limits.maxMemory
        if bound > 0 && queued + payloadReceived + indexBytes > bound {
            drop(largestOf: backlogs, queued: queued, bound: bound)
        }
        if !backlogWatch.watched.isEmpty { checkTimer?.schedule(after: Self.checkInterval) }
    }

    /// Over the bound: unfinished payloads are held bytes like queued output, so their holders are dropped with
    /// the backlogs, largest first, until what they hold is under nine tenths of what the index leaves.
    private func drop(largestOf backlogs: [(pending: Int, connection: ClientConnection)], queued: Int, bound: Int) {
        var queued = queued
        var total = queued + payloadReceived
        var largest = backlogs.map { (bytes: $0.pending, connection: $0.connection, isBacklog: true) }
        for (id, hold) in payloads where hold.received > 0 {
            guard let connection = host.connections[id] else { continue }
            largest.append((hold.received, connection, false))
        }
        largest.sort { $0.bytes > $1.bytes }
        let target = max(0, (bound - indexBytes) * 9 / 10)
        var freed = 0
        for (bytes, connection, isBacklog) in largest where total > target {
            backlogWatch.drops += 1
            if isBacklog {
                backlogWatch.watched.remove(connection.id)
                connection.isBacklogWatched = false
                host.disconnect(connection, reason: .slowConsumer(
                    "\(bytes) bytes pending while the server is over max_memory=\(bound)"))
                queued -= bytes
            } else {
                host.disconnect(connection, reason: .memoryBound(
                    "\(bytes) bytes of an unfinished payload or line held while over max_memory=\(bound)"))
            }
            total -= bytes
            freed += bytes
        }
        backlogWatch.lastQueued = queued
        payloadReceivedAtCheck = payloadReceived
        host.logger.warning(
            "over max_memory=\(bound): dropped the largest slow consumers and unfinished payloads, \(freed) bytes")
    }
}
