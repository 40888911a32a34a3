import FanoutProtocol

/// On several nodes the engine follows the subscriptions: it subscribes in Redis to what this node's clients
/// hold, and a SUB waits until that is in effect.
extension Subscriptions {
    /// A SUB replies once its subjects are subscribed where the engine needs them (several nodes: in Redis, on
    /// the shards that are up): until then a message published on another node would not reach this one. The
    /// SUB waits, the connection held, and runs after. True when it waits; the memory engine never makes it.
    func awaitsEngine(_ patterns: [String], line: UnsafeRawBufferPointer, of connection: ClientConnection) -> Bool {
        let engine = host.engine
        guard engine.followsSubscriptions else { return false }
        if let pending = connection.extras?.pendingReplies, pending.subscribeNow {
            pending.subscribeNow = false
            return false
        }
        let fresh = patterns.filter { !connection.subscriptions.contains($0) && Subject.isValidPattern($0)
            && Subject.wildcardPatternProblem($0) == nil }
        guard !fresh.isEmpty, fresh.count <= host.configuration.limits.maxSubscriptions else { return false }
        // Held for the wait (the SUB's own subscriptions take over when it runs).
        for pattern in fresh { engine.retain(pattern: pattern) }
        let ready = engine.whenInEffect(fresh) { [unowned self, weak connection] in
            if let connection, let pending = connection.extras?.pendingReplies {
                pending.replaying = false
                pending.subscribeNow = true
                if connection.socket != nil, self.host.engine === engine {
                    self.host.replies.resumeCommands(pending, of: connection)
                }
                pending.subscribeNow = false
            }
            for pattern in fresh { engine.release(pattern: pattern) }
        }
        guard !ready else {
            for pattern in fresh { engine.release(pattern: pattern) }
            return false
        }
        let pending = host.replies.pending(of: connection)
        pending.replaying = true
        pending.deferred.append(Array(line))
        connection.stopReading(.engineHold)
        return true
    }

    /// Keeps the engine's subscriptions in step with the local ones (`add` and friends): a run of messages
    /// from Redis goes out first to those who held the patterns when they came.
    func engineSubscriptionsChanged(_ patterns: some Sequence<String>, adding: Bool) {
        let engine = host.engine
        guard engine.followsSubscriptions else { return }
        host.fanout.close()
        for pattern in patterns {
            if adding { engine.retain(pattern: pattern) } else { engine.release(pattern: pattern) }
        }
    }
}
