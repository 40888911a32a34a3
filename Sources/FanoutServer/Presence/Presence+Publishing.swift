import FanoutEngine
import FanoutProtocol

/// Joins and leaves go out as messages on `$presence.<subject>` through the engine's publish path, like a
/// client's PUB: numbered, kept by history rules that name them, fanned out on every transport (and, on several
/// nodes, through the engine). They are queued where the membership changes (which may be in the middle of a
/// fan-out, as a slow consumer is dropped) and published a slice per loop pass, in the order they came.
extension Presence {
    /// Events published per loop pass: a mass departure (a shutdown, thousands of closes, one connection with
    /// a thousand subjects) goes out over several passes, each a fraction of a millisecond with few watchers.
    static let slice = 256

    /// Past this many queued, a pass publishes the excess too: the queue's memory stays bounded however fast
    /// clients join and leave, at the cost of a longer pass (no longer than the commands that queued them).
    static let maxQueued = 65_536

    /// How long the engine may refuse the oldest event (several nodes: a busy or absent shard) before refused
    /// events are dropped rather than kept for the next try: a shard that is away for longer loses the joins
    /// and leaves meanwhile, as a client's PUB would, and the rest go on.
    static let refusalPatience: Duration = .seconds(2)
    /// The wait before publishing again after a refusal.
    static let retryDelay: Duration = .milliseconds(5)

    /// Queues `event` for publication on `$presence.<subject>`, after every event queued before it.
    func announce(_ event: PresenceEvent, on subject: String) {
        queue.append(QueuedEvent(subject: PresenceText.eventSubject(for: subject), payload: event.payload))
        publishTimer.schedule(on: host.loop) { [unowned self] in self.publishSlice() }
    }

    private func publishSlice() {
        publish(max(Self.slice, queue.count - Self.maxQueued))
        if !queue.isEmpty {
            publishTimer.schedule(on: host.loop, after: refusedSince == nil ? .zero : Self.retryDelay) {
                [unowned self] in self.publishSlice()
            }
        }
    }

    /// Whether joins or leaves wait to be published: a stopping server publishes them before it stops.
    var hasQueued: Bool { !queue.isEmpty }

    /// Publishes what is queued, all of it: the server is stopping, and the leaves of its shutdown must reach
    /// history (or the engine) before it closes.
    func publishRemaining() {
        publish(queue.count)
    }

    /// Publishes the `count` oldest queued events as the server's own publishes (no publisher: no `+OK` to
    /// write), then ends the slice as a read ends, so the run goes out and the engine records it. Consecutive
    /// events of one subject share a publish run, as a client's pipelined PUBs do: its receivers are gathered
    /// once and each is written once, where a run per event cost 9 times a message per watcher. The runs point
    /// at the events' bytes, so the slice's subjects and payloads sit in one buffer until the last run closes.
    private func publish(_ count: Int) {
        guard !queue.isEmpty, count > 0 else { return }
        let host = self.host
        // No client's publish run may take these as its own.
        host.fanout.finish()
        // The slice's buffers are reused from slice to slice: made anew each time, their varying sizes left the
        // heap a megabyte larger after every 100,000 joins and leaves (`PresenceHostileTests`).
        var batch = scratch.batch
        var bytes = scratch.bytes
        var events = scratch.events
        scratch = Scratch()
        defer { scratch = Scratch(keeping: batch, bytes, events) }
        for _ in 0..<min(count, queue.count) {
            let event = queue.removeFirst()
            let subjectStart = bytes.count
            bytes.append(contentsOf: event.subject.utf8)
            let payloadStart = bytes.count
            bytes.append(contentsOf: event.payload.utf8)
            events.append((subjectStart..<payloadStart, payloadStart..<bytes.count))
            batch.append(event)
        }
        let dropping = refusedSince.map { ContinuousClock.now - $0 > Self.refusalPatience } ?? false
        var dropped = 0
        var lastRefusal = ""
        bytes.withUnsafeBytes { all in
            events: for (position, event) in events.enumerated() {
                let subject = UnsafeRawBufferPointer(rebasing: all[event.subject])
                let payload = UnsafeRawBufferPointer(rebasing: all[event.payload])
                switch host.fanout.publishOwn(subject: subject, payload: payload, anyBytes: false, receipt: (self, 0)) {
                case .numbered, .pending:
                    break
                case .refused(let reason):
                    lastRefusal = reason
                    if dropping {
                        dropped += 1
                        continue events
                    }
                    // Kept, in order, for the next try: a busy shard (its PUBs in flight at max_in_flight)
                    // answers within milliseconds.
                    if refusedSince == nil { refusedSince = .now }
                    queue.prepend(contentsOf: batch[position...])
                    break events
                }
                eventsPublished += 1
                refusedSince = nil
            }
            // The last run goes out while its bytes are still here.
            host.fanout.close()
        }
        if dropped > 0 {
            host.logger.warning("presence events not published: \(lastRefusal)", metadata: ["dropped": "\(dropped)"])
        }
        host.readEnded()
    }

    /// An engine that answers later (several nodes) tells how the publish went; nobody waits for it.
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {
        if case .failure(let failure) = result {
            host.logger.warning("presence event not published: \(failure)")
        }
    }
}

extension Presence {
    /// A publication slice's buffers, kept empty between slices with their capacity, up to `keptBytes`.
    struct Scratch {
        static let keptBytes = 64 << 10

        var batch: [QueuedEvent] = []
        var bytes: [UInt8] = []
        var events: [(subject: Range<Int>, payload: Range<Int>)] = []

        init() {}

        init(keeping batch: [QueuedEvent], _ bytes: [UInt8], _ events: [(subject: Range<Int>, payload: Range<Int>)]) {
            // A slice far larger than usual (the queue's excess) does not keep its memory.
            guard bytes.capacity <= Self.keptBytes else { return }
            self.batch = batch
            self.bytes = bytes
            self.events = events
            self.batch.removeAll(keepingCapacity: true)
            self.bytes.removeAll(keepingCapacity: true)
            self.events.removeAll(keepingCapacity: true)
        }
    }
}
