import FanoutEventLoop

/// Publisher backpressure (`backpressure_bytes`), the alternative to dropping a subscriber that falls behind:
/// its publishers stop being read until it catches up. Off by default.
///
/// Bookkeeping is by connection id, not reference, so a held publisher that disconnects is simply not found
/// on release, and no subscriber keeps a dead publisher alive.
extension Server {
    /// Stops reading `publisher` until `subscriber`'s backlog drains to half of `backpressure_bytes`.
    func holdBack(_ publisher: ClientConnection?, for subscriber: ClientConnection) {
        guard let publisher, let socket = subscriber.socket,
              subscriber.extras?.heldPublishers.contains(publisher.id) != true else {
            return
        }
        subscriber.madeExtras.heldPublishers.append(publisher.id)
        socket.reportsDirectDrains = true
        // Told when the backlog is down to half; the lower mark wins if it is also paused on its own replies.
        let resumeMark = configuration.limits.backpressureBytes / 2
        let paused = subscriber.gate.stops.contains(.outputFull)
        socket.setWriteLowWatermark(paused ? min(resumeMark, configuration.limits.readPauseBytes / 2) : resumeMark)
        if publisher.holdBack() { stats.backpressurePauses += 1 }
    }

    /// Lets go of every publisher `subscriber` held: on drain, or when it disconnects. A publisher free to go
    /// is read again on the next loop pass, never from here: this may run in the middle of that publisher's
    /// own fan-out (a held subscriber dropped as a slow consumer).
    func releasePublishers(heldBy subscriber: ClientConnection) {
        let held = subscriber.extras?.heldPublishers ?? []
        subscriber.extras?.heldPublishers.removeAll()
        if !subscriber.gate.stops.contains(.outputFull) { subscriber.socket?.setWriteLowWatermark(0) }
        for id in held where connections[id]?.releaseHold() == true {
            fanout.releasedPublishers.append(id)
        }
        guard !fanout.releasedPublishers.isEmpty else { return }
        if fanout.resumeTimer == nil {
            fanout.resumeTimer = LoopTimer(loop: loop) { [unowned self] in self.resumeReleasedPublishers() }
        }
        if fanout.resumeTimer?.isScheduled == false { fanout.resumeTimer?.schedule(after: .zero) }
    }

    private func resumeReleasedPublishers() {
        let released = fanout.releasedPublishers
        fanout.releasedPublishers.removeAll()
        for id in released { connections[id]?.readAgain() }
    }
}
