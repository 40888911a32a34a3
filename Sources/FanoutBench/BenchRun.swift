@_spi(Bench) import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Runs one scenario against one server on a loop of its own: connects and confirms every subscriber,
/// then publishers, publishes with a bounded window (or at a fixed rate), and waits for delivery to finish.
public final class BenchRun {
    private let loop: EventLoop
    private let scenario: BenchScenario
    private let makePeer: (EventLoop) -> BenchPeer
    /// Subscribers' peers, when they differ from publishers' (WebSocket subscribers, TCP publishers).
    private let makeSubscriber: (EventLoop) -> BenchPeer
    private let showProgress: Bool
    private var result: BenchResult

    private var subscribers: [BenchPeer] = []
    /// The healthy subscribers' connections, read raw once subscribed.
    private var sinks: [DeliverySink] = []
    private let tally: DeliveryTally
    private var publishers: [PublishPump] = []
    private var quotas: [Int] = []
    private var sentBy: [Int] = []
    private var payload: [UInt8]
    private var subjectNames: [String]
    private var perSubject: [Int]
    private var sent = 0
    private var acknowledged = 0
    private var startedAt: UInt64 = 0
    private var lastProgressCount = 0
    private var lastProgressAt: UInt64 = 0
    private var failure: String?
    private var timers: [LoopTimer] = []
    private lazy var afterCallbacks = AfterCallback(loop: loop)
    private var finished = false

    public init(scenario: BenchScenario, target: String, showProgress: Bool,
                makeSubscriber: ((EventLoop) -> BenchPeer)? = nil, makePeer: @escaping (EventLoop) -> BenchPeer) throws {
        loop = try EventLoop()
        self.scenario = scenario
        self.makePeer = makePeer
        self.makeSubscriber = makeSubscriber ?? makePeer
        self.showProgress = showProgress
        result = BenchResult(target: target)
        payload = BenchPayload.make(size: scenario.payloadSize, lineFeed: scenario.binary)
        subjectNames = (0..<scenario.subjects).map(scenario.subject)
        perSubject = scenario.subscribersPerSubject
        // Paced runs are about latency: time every delivery. Flat-out runs time one in 16 per subscriber, which
        // keeps the clock and histogram off most deliveries and still gives thousands of samples.
        tally = DeliveryTally(sampleEvery: scenario.rate == nil ? 16 : 1)
    }

    public func run() throws -> BenchResult {
        ResourceLimits.raiseOpenFiles(to: scenario.subscribers + scenario.publishers + 256)
        connectSubscribers()
        try loop.run(polling: scenario.rate == nil)
        timers.removeAll()
        afterCallbacks.tearDown()
        sinks.removeAll()
        subscribers.forEach { $0.close() }
        publishers.removeAll()
        if showProgress { print("\r\u{1B}[K", terminator: "") }
        if let failure { throw BenchFailure(description: failure) }
        return result
    }

    private func fail(_ message: String) {
        if failure == nil { failure = message }
        loop.stop()
    }

    /// Opens `count` peers, at most 256 connecting at once; `each` runs once a peer is connected.
    private func connect(count: Int, subscribers: Bool = false, each: @escaping (BenchPeer, @escaping () -> Void) -> Void,
                         then: @escaping ([BenchPeer]) -> Void) {
        var peers: [BenchPeer] = []
        var started = 0
        var done = 0
        guard count > 0 else { then([]); return }
        func startNext() {
            guard started < count else { return }
            started += 1
            let peer = subscribers ? makeSubscriber(loop) : makePeer(loop)
            peers.append(peer)
            peer.connect { [unowned self] error in
                if let error { return self.fail(error) }
                each(peer) {
                    done += 1
                    if done == count { then(peers) } else { startNext() }
                }
            }
        }
        for _ in 0..<min(256, count) { startNext() }
    }

    private func connectSubscribers() {
        var index = 0
        connect(count: scenario.subscribers + scenario.stalled, subscribers: true, each: { [unowned self] peer, done in
            let subject = self.subjectNames[index % self.scenario.subjects]
            let stalls = index >= self.scenario.subscribers
            index += 1
            peer.onFailure = { [unowned self] reason in self.fail("subscriber: \(reason)") }
            peer.subscribe(subject) { [unowned self] error in
                if let error { return self.fail("SUB \(subject): \(error)") }
                if stalls {
                    // A stalled subscriber never reads again; the server is expected to drop it.
                    peer.stall()
                    return done()
                }
                // Hand the connection to a sink once the peer's read callback (which called us) has returned.
                self.afterCallbacks.run { [unowned self] in
                    guard let (fd, unread) = peer.releaseConnection() else {
                        return self.fail("SUB \(subject): connection lost")
                    }
                    let sink = DeliverySink(loop: self.loop, fd: fd, unread: unread, format: peer.wireFormat,
                                            tally: self.tally)
                    sink.onFailure = { [unowned self] reason in self.fail("subscriber: \(reason)") }
                    sink.afterRead = { [unowned self] in self.checkFinished() }
                    self.sinks.append(sink)
                    done()
                }
            }
        }, then: { [unowned self] peers in
            self.subscribers = peers
            self.connectPublishers()
        })
    }

    private func connectPublishers() {
        let base = scenario.messages / scenario.publishers
        quotas = (0..<scenario.publishers).map { base + ($0 < scenario.messages % scenario.publishers ? 1 : 0) }
        sentBy = [Int](repeating: 0, count: scenario.publishers)
        connect(count: scenario.publishers, each: { [unowned self] peer, done in
            // As with subscribers: the connection moves to a pump once the greeting's callback has returned.
            self.afterCallbacks.run { [unowned self] in
                guard let (fd, unread) = peer.releaseConnection() else {
                    return self.fail("publisher: connection lost")
                }
                let number = self.publishers.count
                let pump = PublishPump(loop: self.loop, fd: fd, unread: unread, format: peer.wireFormat,
                                       subjects: self.subjectNames, payloadSize: self.scenario.payloadSize,
                                       window: self.scenario.window, binary: self.scenario.binary)
                pump.onAcknowledged = { [unowned self] count, receivers in self.acknowledged(count, receivers) }
                pump.onFailure = { [unowned self] reason in self.fail("publisher: \(reason)") }
                pump.afterRead = { [unowned self] in
                    if self.scenario.rate == nil { self.pump(number) }
                    self.checkFinished()
                }
                self.publishers.append(pump)
                done()
            }
        }, then: { [unowned self] peers in
            peers.forEach { $0.close() }
            self.begin()
        })
    }

    private func begin() {
        startedAt = MonotonicClock.nanoseconds()
        lastProgressAt = startedAt
        if let rate = scenario.rate {
            let pacer = LoopTimer(loop: loop, repeating: true) { [unowned self] in
                let elapsed = Double(MonotonicClock.nanoseconds() - self.startedAt) / 1e9
                let allowed = min(self.scenario.messages, Int(elapsed * Double(rate)) + 1)
                for number in self.publishers.indices where self.sent < allowed { self.pump(number, upTo: allowed) }
            }
            pacer.schedule(after: .milliseconds(1))
            timers.append(pacer)
        } else {
            for number in publishers.indices { pump(number) }
        }
        let watchdog = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.watch() }
        watchdog.schedule(after: .milliseconds(100))
        timers.append(watchdog)
        if scenario.messages == 0 { loop.stop() }
    }

    /// Publishes from publisher `number` while its window has room (and, paced, while `limit` allows).
    private func pump(_ number: Int, upTo limit: Int = .max) {
        let pump = publishers[number]
        while pump.inFlight < scenario.window && sentBy[number] < quotas[number] && sent < limit {
            let subjectIndex = sent % scenario.subjects
            // Send times matter only to subscribers; publish-only runs spare the generator the clock.
            if scenario.subscribers > 0 { BenchPayload.write(timestamp: MonotonicClock.nanoseconds(), into: &payload) }
            payload.withUnsafeBytes { pump.publish(subject: subjectIndex, payload: $0) }
            sent += 1
            sentBy[number] += 1
            result.expected += perSubject[subjectIndex]
        }
        pump.flush()
    }

    private func acknowledged(_ count: Int, _ receivers: Int) {
        acknowledged += count
        result.acknowledgedReceivers += receivers
        if acknowledged == scenario.messages {
            result.published = acknowledged
            result.publishSeconds = Double(MonotonicClock.nanoseconds() - startedAt) / 1e9
        }
    }

    private func checkFinished() {
        guard !finished, acknowledged == scenario.messages, tally.delivered >= result.expected else { return }
        finish()
    }

    private func finish() {
        finished = true
        result.published = acknowledged
        if result.publishSeconds == 0 { result.publishSeconds = Double(MonotonicClock.nanoseconds() - startedAt) / 1e9 }
        result.delivered = tally.delivered
        result.latency = tally.latency
        result.latencySampleEvery = tally.sampleEvery
        result.longestGapSeconds = Double(tally.longestGap) / 1e9
        let end = tally.delivered > 0 ? tally.lastDeliveryAt : MonotonicClock.nanoseconds()
        result.deliverSeconds = Double(end - startedAt) / 1e9
        loop.stop()
    }

    /// Progress display, and the end of a run whose deliveries stopped coming.
    private func watch() {
        let now = MonotonicClock.nanoseconds()
        let progressCount = tally.delivered + acknowledged
        if progressCount != lastProgressCount {
            lastProgressCount = progressCount
            lastProgressAt = now
        } else if Duration.nanoseconds(Int64(now - lastProgressAt)) > scenario.drainTimeout {
            if acknowledged < scenario.messages {
                return fail("publishing stalled: \(acknowledged) of \(scenario.messages) acknowledged")
            }
            return finish()
        }
        if showProgress && (now - startedAt) / 1_000_000_000 != (now - startedAt - 100_000_000) / 1_000_000_000 {
            let seconds = Double(now - startedAt) / 1e9
            let rate = cFormat("%.0f", Double(tally.delivered) / max(seconds, 0.001))
            print("\r\u{1B}[K\(result.target): published \(acknowledged)/\(scenario.messages), "
                  + "delivered \(tally.delivered)/\(result.expected) (\(rate)/s)", terminator: "")
            fflush(nil)
        }
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
}
