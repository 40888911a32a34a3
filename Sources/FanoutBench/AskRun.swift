@_spi(Bench) import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Runs a request/reply scenario against one server on a loop of its own: connects and confirms the
/// responders (the scenario's subscribers, all on subject `bench.0`, plain or in its group), then the askers
/// (its publishers), each keeping `window` questions open until it has put its share of `messages`, and times
/// each question from its send to its close.
///
/// Fanout (1.2): `ASK bench.0 <timeout> <max-answers> <payload>`, each responder answers `ANSWER <id>
/// <payload>`, and a question closes at its `DONE`. NATS: a request is `PUB bench.0 _INBOX.<asker>.<n>`, each
/// responder publishes its reply to that inbox, and a request closes at its first reply (NATS's request
/// semantics, matching `max-answers 1`).
public final class AskRun {
    private let loop: EventLoop
    private let scenario: BenchScenario
    private let settings: AskSettings
    private let makePeer: (EventLoop) -> BenchPeer
    private var result: BenchResult
    private let tally = AskTally()
    private var setupPeers: [BenchPeer] = []
    private var responders: [Responder] = []
    private var askers: [Asker] = []
    private var failure: String?
    private var timers: [LoopTimer] = []
    private lazy var afterCallbacks = AfterCallback(loop: loop)
    private var startedAt: UInt64 = 0
    private var lastProgress = 0
    private var lastProgressAt: UInt64 = 0
    private var finished = false
    static let subject = "bench.0"

    public init(scenario: BenchScenario, target: String, makePeer: @escaping (EventLoop) -> BenchPeer) throws {
        loop = try EventLoop()
        self.scenario = scenario
        settings = scenario.ask ?? AskSettings(maxAnswers: 0, timeoutMilliseconds: 10_000)
        self.makePeer = makePeer
        result = BenchResult(target: target)
    }

    /// Answers each question should get: one per responder (a group's members count once), at most
    /// max-answers.
    private var answersPerQuestion: Int {
        let receivers = scenario.group == nil ? scenario.subscribers : min(scenario.subscribers, 1)
        return settings.maxAnswers > 0 ? min(settings.maxAnswers, receivers) : receivers
    }

    public func run() throws -> BenchResult {
        ResourceLimits.raiseOpenFiles(to: scenario.subscribers + scenario.publishers + 256)
        connect(count: scenario.subscribers, subscribeTo: Self.subject, each: { [unowned self] connection, format in
            self.responders.append(Responder(connection: connection, format: format))
        }, then: { [unowned self] in
            self.connect(count: self.scenario.publishers, subscribeTo: nil, each: { [unowned self] connection, format in
                let asker = Asker(number: self.askers.count, connection: connection, format: format,
                                  scenario: self.scenario, settings: self.settings, tally: self.tally)
                asker.afterRead = { [unowned self] in self.checkFinished() }
                self.askers.append(asker)
            }, then: { [unowned self] in self.begin() })
        })
        try loop.run(polling: true)
        timers.removeAll()
        afterCallbacks.tearDown()
        askers.removeAll()
        responders.removeAll()
        setupPeers.forEach { $0.close() }
        if let failure { throw BenchFailure(description: failure) }
        return result
    }

    private func fail(_ message: String) {
        if failure == nil { failure = message }
        loop.stop()
    }

    /// Opens `count` peers at once; each subscribes to `subject` (responders) or, for NATS askers, to its own
    /// inbox, and then hands its connection over to `each`.
    private func connect(count: Int, subscribeTo subject: String?,
                         each: @escaping (RawConnection, WireFormat) -> Void, then: @escaping () -> Void) {
        var done = 0
        guard count > 0 else { return then() }
        for number in 0..<count {
            let peer = makePeer(loop)
            setupPeers.append(peer)
            peer.onFailure = { [unowned self] reason in self.fail(reason) }
            peer.connect { [unowned self] error in
                if let error { return self.fail(error) }
                let wanted = subject ?? (peer.wireFormat == .nats ? Asker.inboxPattern(number) : nil)
                let handOver = { [unowned self] in
                    self.afterCallbacks.run { [unowned self] in
                        guard let (fd, unread) = peer.releaseConnection() else { return self.fail("connection lost") }
                        let connection = RawConnection(loop: self.loop, fd: fd, unread: unread)
                        connection.onFailure = { [unowned self] reason in self.fail(reason) }
                        each(connection, peer.wireFormat)
                        done += 1
                        if done == count { then() }
                    }
                }
                guard let wanted else { return handOver() }
                peer.subscribe(wanted) { [unowned self] error in
                    if let error { return self.fail("subscribing to \(wanted): \(error)") }
                    handOver()
                }
            }
        }
    }

    private func begin() {
        startedAt = MonotonicClock.nanoseconds()
        lastProgressAt = startedAt
        let base = scenario.messages / scenario.publishers
        for (number, asker) in askers.enumerated() {
            asker.quota = base + (number < scenario.messages % scenario.publishers ? 1 : 0)
        }
        result.expected = scenario.messages * answersPerQuestion
        askers.forEach { $0.pump() }
        let watchdog = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.watch() }
        watchdog.schedule(after: .milliseconds(100))
        timers.append(watchdog)
        checkFinished()
    }

    private func checkFinished() {
        guard !finished, tally.closed == scenario.messages, tally.answers >= result.expected else { return }
        finish()
    }

    private func finish() {
        finished = true
        let end = tally.closed > 0 ? tally.lastClosedAt : MonotonicClock.nanoseconds()
        result.published = tally.closed
        result.publishSeconds = Double(end - startedAt) / 1e9
        result.delivered = tally.answers
        result.deliverSeconds = result.publishSeconds
        result.latency = tally.latency
        result.latencySampleEvery = 1
        loop.stop()
    }

    private func watch() {
        let now = MonotonicClock.nanoseconds()
        let progress = tally.closed + tally.answers
        if progress != lastProgress {
            lastProgress = progress
            lastProgressAt = now
        } else if Duration.nanoseconds(Int64(now - lastProgressAt)) > scenario.drainTimeout {
            if tally.closed < scenario.messages {
                return fail("questions stalled: \(tally.closed) of \(scenario.messages) closed")
            }
            finish()
        }
    }
}

/// What the askers of one run saw, summed over all of them.
final class AskTally {
    var closed = 0
    var answers = 0
    var lastClosedAt: UInt64 = 0
    /// Send-to-close time of every question, in nanoseconds.
    var latency = BenchResult.latencyHistogram()

    func close(sentAt: UInt64, now: UInt64) {
        closed += 1
        lastClosedAt = now
        if now >= sentAt { _ = latency.record(now - sentAt) }
    }
}
