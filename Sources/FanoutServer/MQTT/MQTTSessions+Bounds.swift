import FanoutEventLoop

/// The bounds on sessions kept for clients that are away: `mqtt_session_expiry` by a timer set for the oldest,
/// and a reload's new bounds applied at once.
extension MQTTSessions {
    /// Sets the timer for the moment the session away longest expires; none without an expiry or a session.
    func scheduleExpiry() {
        guard let expiry = host.configuration.mqtt.sessionExpiry, let oldest = oldestParked() else {
            expiryTimer = nil
            return
        }
        if expiryTimer == nil {
            expiryTimer = LoopTimer(loop: host.loop) { [unowned self] in self.expire() }
        }
        let due = oldest.since + expiry
        let now = ContinuousClock.now
        expiryTimer?.schedule(after: due > now ? due - now : .zero)
    }

    /// Drops every session away longer than `mqtt_session_expiry`, counted, then waits for the next.
    /// O(expired), amortised: the oldest are at the front of `awayOrder`.
    func expire() {
        if let expiry = host.configuration.mqtt.sessionExpiry {
            let now = ContinuousClock.now
            while let oldest = oldestParked(), now - oldest.since >= expiry { drop(oldest) }
        }
        scheduleExpiry()
    }

    /// A reload's bounds, at once: sessions past `mqtt_max_sessions` go (away longest first), queues past
    /// `mqtt_session_max_messages` lose their oldest, and the expiry counts with the new setting.
    /// O(parked sessions + dropped).
    func applyBounds() {
        let settings = host.configuration.mqtt
        while parked.count > settings.maxSessions, let oldest = oldestParked() { drop(oldest) }
        for session in parked.values { trim(session, to: settings.sessionMaxMessages) }
        expire()
    }
}
