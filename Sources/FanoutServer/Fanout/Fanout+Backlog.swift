import FanoutEngine
import FanoutEventLoop

/// A receiver's backlog after each write, against the marks (`BacklogMarks`): the memory bound's watch, the
/// slow-consumer limit, and publisher backpressure (`backpressure_bytes`), the alternative to dropping a
/// subscriber that falls behind: its publishers stop being read until it catches up. Off by default.
///
/// Backpressure's bookkeeping is by connection id, not reference, so a held publisher that disconnects is
/// simply not found on release, and no subscriber keeps a dead publisher alive.
extension Fanout {
    /// Checks a receiver's backlog after a write: one comparison on the fast path, below every mark.
    @inline(__always)
    func checkBacklog(of receiver: PublishRun.Receiver, marks: BacklogMarks) {
        let pending = receiver.socket.outputCount
        guard pending > marks.watchAbove else { return }
        // Retained: the marks may drop it, and the connection table let go (`Unretained`'s rules).
        applyBacklogMarks(marks, to: receiver.connection.retained, pending: pending)
    }

    /// Has the server-wide memory bound watch `connection` once its backlog is past `BacklogWatch.mark`,
    /// holds the run's publisher back past `backpressure_bytes`, and drops the connection past the limit.
    func applyBacklogMarks(_ marks: BacklogMarks, to connection: ClientConnection, pending: Int) {
        if pending > BacklogWatch.mark { host.memory.watchBacklog(of: connection) }
        if pending > marks.holdAbove { holdBack(run.publisher, for: connection) }
        if pending > marks.limit { dropSlowConsumer(connection, pending: pending) }
    }

    /// The same check for a connection written to outside a run (a replay's waiting lines, a group's share, a
    /// question or an answer), whose unsent output includes what waits behind a replay.
    func checkBacklog(of connection: ClientConnection, marks: BacklogMarks) {
        let pending = connection.pendingBytes
        guard pending > marks.watchAbove else { return }
        applyBacklogMarks(marks, to: connection, pending: pending)
    }

    /// Whether `subscriber`'s backlog holds some publisher back: asked on its drains and its departure.
    @inline(__always)
    func holdsPublishers(_ subscriber: ClientConnection) -> Bool {
        !heldPublishers.isEmpty && heldPublishers[subscriber.id] != nil
    }

    func dropSlowConsumer(_ connection: ClientConnection, pending: Int) {
        host.disconnect(connection, reason: .slowConsumer(
            "\(pending) bytes pending, max_pending_bytes=\(host.configuration.limits.maxPendingBytes)"))
    }
    /// Stops reading `publisher` until `subscriber`'s backlog drains to half of `backpressure_bytes`.
    func holdBack(_ publisher: ClientConnection?, for subscriber: ClientConnection) {
        guard let publisher, let socket = subscriber.socket,
              heldPublishers[subscriber.id]?.contains(publisher.id) != true else { return }
        heldPublishers[subscriber.id, default: []].append(publisher.id)
        socket.reportsDirectDrains = true
        // Told when the backlog is down to half; the lower mark wins if it is also paused on its own replies.
        let resumeMark = host.configuration.limits.backpressureBytes / 2
        let paused = subscriber.gate.stops.contains(.outputFull)
        socket.setWriteLowWatermark(paused ? min(resumeMark, host.configuration.limits.readPauseBytes / 2) : resumeMark)
        if publisher.holdBack() { host.stats.backpressurePauses += 1 }
    }

    /// Lets go of every publisher `subscriber` held: on drain, or when it disconnects. A publisher free to go
    /// is read again on the next loop pass, never from here: this may run in the middle of that publisher's
    /// own fan-out (a held subscriber dropped as a slow consumer).
    func releasePublishers(heldBy subscriber: ClientConnection) {
        let held = heldPublishers.removeValue(forKey: subscriber.id) ?? []
        if !subscriber.gate.stops.contains(.outputFull) { subscriber.socket?.setWriteLowWatermark(0) }
        for id in held where host.connections[id]?.releaseHold() == true {
            releasedPublishers.append(id)
        }
        guard !releasedPublishers.isEmpty else { return }
        if resumeTimer == nil {
            resumeTimer = LoopTimer(loop: host.loop) { [unowned self] in self.resumeReleasedPublishers() }
        }
        if resumeTimer?.isScheduled == false { resumeTimer?.schedule(after: .zero) }
    }

    private func resumeReleasedPublishers() {
        let released = releasedPublishers
        releasedPublishers.removeAll()
        for id in released { host.connections[id]?.readAgain() }
    }
}

/// The queued-output marks a receiver's backlog is checked against after each write: the memory bound's watch
/// (`BacklogWatch.mark`), backpressure on the publisher (`backpressure_bytes`, when set) and the slow-consumer
/// limit (`max_pending_bytes`). Made once per flush from the configuration.
struct BacklogMarks {
    let limit: Int
    /// Int.max when backpressure is off.
    let holdAbove: Int
    /// The lowest of the marks: below it, nothing else is looked at (one comparison per receiver).
    let watchAbove: Int

    init(_ limits: Limits) {
        limit = limits.maxPendingBytes
        holdAbove = limits.backpressureBytes > 0 ? limits.backpressureBytes : Int.max
        watchAbove = min(holdAbove, limit, BacklogWatch.mark)
    }
}
