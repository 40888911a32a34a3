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

    /// Queues `event` for publication on `$presence.<subject>`, after every event queued before it.
    func announce(_ event: PresenceEvent, on subject: String) {
        queue.append(QueuedEvent(subject: PresenceText.eventSubject(for: subject), payload: event.payload))
        publishTimer.schedule(on: host.loop) { [unowned self] in self.publishSlice() }
    }

    private func publishSlice() {
        publish(max(Self.slice, queue.count - Self.maxQueued))
        if !queue.isEmpty {
            publishTimer.schedule(on: host.loop) { [unowned self] in self.publishSlice() }
        }
    }

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
        let engine = host.engine
        // No client's publish run may take these as its own.
        host.fanout.finish()
        var bytes: [UInt8] = []
        var events: [(subject: Range<Int>, payload: Range<Int>)] = []
        events.reserveCapacity(min(count, queue.count))
        for _ in 0..<min(count, queue.count) {
            let event = queue.removeFirst()
            let subjectStart = bytes.count
            bytes.append(contentsOf: event.subject.utf8)
            let payloadStart = bytes.count
            bytes.append(contentsOf: event.payload.utf8)
            events.append((subjectStart..<payloadStart, payloadStart..<bytes.count))
        }
        bytes.withUnsafeBytes { all in
            for event in events {
                let subject = UnsafeRawBufferPointer(rebasing: all[event.subject])
                let payload = UnsafeRawBufferPointer(rebasing: all[event.payload])
                switch engine.publish(subject: subject, payload: payload, anyBytes: false, receipt: (self, 0)) {
                case .numbered(let seq, let run, let recorded):
                    _ = host.fanout.deliver(NumberedMessage(subject: subject, seq: seq, payload: payload,
                                                            anyBytes: false, run: run, recorded: recorded))
                case .pending:
                    break
                case .refused(let reason):
                    host.logger.warning("presence event not published: \(reason)",
                                        metadata: ["subject": "\(String(decoding: subject, as: UTF8.self))"])
                }
                eventsPublished += 1
            }
            // The last run goes out while its bytes are still here.
            host.fanout.close()
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
