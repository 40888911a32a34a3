import DequeModule
import FanoutEngine
import FanoutEventLoop

/// What replays need from the server: the limits and counters, the engines, the fan-out and the memory bound,
/// holding output for the disk, and the subscription and command-holding steps a RESUME or LAST takes.
protocol ReplaysHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var loop: EventLoop { get }
    var stats: ServerStats { get set }
    var connections: ConnectionTable { get }
    var engine: any Engine { get }
    var localHistory: any LocalHistory { get }
    var isStandalone: Bool { get }
    var fanout: Fanout<Server> { get }
    var memory: MemoryGuard! { get }
    var durable: DurableAcknowledgements! { get }
    var subscriptions: Subscriptions { get }
    func holdCommands(of connection: ClientConnection) -> Bool
    func releaseCommands(of connection: ClientConnection)
    /// The replies an engine that answers later still owes.
    var replies: ReplyOrder { get }
    /// MQTT's retained messages: what `LAST` gives when history has nothing.
    var mqttRetained: MQTTRetained { get }
}

/// RESUME and LAST (`Replays+Resume.swift`) and the replays they start, which go out a slice per loop pass,
/// round robin between connections, so that a replay of hundreds of thousands of messages never keeps the
/// loop from everyone else for more than `Server.turn`, and only as fast as each client reads (`ReplayJob`'s
/// worst case).
final class Replays {
    /// Unsent output above which a replay's next slice waits for the client to read: two slices.
    static let aheadBytes = 2 * PublishRun.flushBytes

    unowned let host: any ReplaysHost
    /// Replays being sent, in turn.
    private var jobs = Deque<ReplayJob>()
    private var timer = SliceTimer()
    /// Scratch for encoding a slice, kept from slice to slice.
    private var scratch: [UInt8] = []
    /// Replays waiting for their clients to read what they were sent (INFO's `replays_waiting`).
    private(set) var awaitingDrain = 0

    init(host: any ReplaysHost) {
        self.host = host
    }

    /// Replays under way to connected clients (INFO's `replays_active`).
    var activeCount: Int { jobs.count { $0.connection.socket != nil } }

    /// Starts sending `job`'s replay on the next loop pass.
    func send(_ job: ReplayJob) {
        jobs.append(job)
        scheduleSlices()
    }

    private func scheduleSlices() {
        timer.schedule(on: host.loop) { [unowned self] in self.continueReplays() }
    }

    /// Sends 64 KiB slices (the batching of live fan-out) of each replay in turn until `Server.turn` is spent.
    /// A job whose client has not read what it was sent waits for its socket to drain instead.
    private func continueReplays() {
        let started = ContinuousClock.now
        while let job = jobs.popFirst() {
            guard let socket = job.connection.socket, let stream = job.stream else {
                job.end()
                continue
            }
            // What waits for the disk (`history_fsync: always`) counts as queued: a replay is encoded no faster
            // than it leaves, so that its own bytes never push its client over max_pending_bytes.
            if socket.outputCount + (job.connection.extras?.heldOutput?.bytes ?? 0) >= Self.aheadBytes {
                job.awaitingDrain = true
                awaitingDrain += 1
                socket.reportsDirectDrains = true
                continue
            }
            scratch.removeAll(keepingCapacity: true)
            let more = stream.encode(into: &scratch, limit: PublishRun.flushBytes,
                                     maxLine: host.configuration.limits.maxLine)
            job.connection.send(scratch)
            let pending = job.connection.pendingBytes
            if pending > BacklogWatch.mark { host.memory.watchBacklog(of: job.connection) }
            if more { jobs.append(job) } else { finish(job) }
            if ContinuousClock.now - started > Server.turn { break }
        }
        if scratch.capacity > 4 * PublishRun.flushBytes { scratch = [] }
        if !jobs.isEmpty { scheduleSlices() }
    }

    /// The client of a job waiting for it to read has read enough (`ClientConnection.socketDidDrain`).
    func drained(_ job: ReplayJob) {
        job.awaitingDrain = false
        awaitingDrain -= 1
        send(job)
    }

    /// A replay waiting for this client to read is in no queue that would notice: it ends here (a queued one
    /// ends at its next slice), letting go of the connection it holds.
    func connectionLeft(_ connection: ClientConnection) {
        guard let job = connection.extras?.replayJob, job.awaitingDrain else { return }
        job.awaitingDrain = false
        awaitingDrain -= 1
        job.end()
    }

    /// A replay waiting for its client to read is in no queue: it ends here, letting go of its connection.
    func endAwaitingDrain() {
        for connection in host.connections.values where connection.extras?.replayJob?.awaitingDrain == true {
            connection.extras?.replayJob?.end()
        }
        awaitingDrain = 0
    }

    /// Ends the queued replays; after `endAwaitingDrain`, when the server is torn down.
    func tearDown() {
        timer.tearDown()
        while let job = jobs.popFirst() { job.end() }
    }
}
