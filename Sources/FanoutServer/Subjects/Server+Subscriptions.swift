import FanoutProtocol

/// Subscriptions live in two directions, the subject index (pattern → weak members) and each connection's
/// own set (member → patterns), and are counted server-wide. These helpers are the only places that change
/// them, so that the three never disagree.
extension Server {
    /// `SUB` (plainly, `group` nil) or `QSUB` (as a member of `group`): subscribes to each pattern the
    /// connection does not hold yet, or to none if that would pass max_subscriptions, and moves the patterns
    /// it holds in another mode into this one. Replies with the count held afterwards.
    func subscribe(_ connection: ClientConnection, to patterns: [String], group: String? = nil) {
        // A set, not a scan of what came before: a 64 KiB line holds thousands of patterns.
        var fresh: [String] = []
        var moving: [String] = []
        var seen = Set<String>(minimumCapacity: patterns.count)
        let grouped = connection.extras?.groupOfPattern ?? [:]
        for pattern in patterns where seen.insert(pattern).inserted {
            if !connection.subscriptions.contains(pattern) {
                fresh.append(pattern)
            } else if grouped[pattern] != group {
                moving.append(pattern)
            }
        }
        // Deep wildcard patterns would let a publish walk most of the index: their depth and stars are capped.
        for pattern in fresh {
            if let problem = Subject.wildcardPatternProblem(pattern) {
                stats.limitRefusals += 1
                connection.send(ProtocolError(.limit, problem).line)
                return
            }
        }
        let limit = configuration.limits.maxSubscriptions
        guard connection.subscriptions.count + fresh.count <= limit else {
            stats.limitRefusals += 1
            let error = ProtocolError(
                .limit, "max_subscriptions=\(limit) reached (holding \(connection.subscriptions.count))")
            connection.send(error.line)
            return
        }
        if memory.indexWouldPassBound(adding: fresh.count) {
            stats.limitRefusals += 1
            connection.send(ProtocolError(.limit, "the server is at max_memory=\(configuration.limits.maxMemory)").line)
            return
        }
        for pattern in moving { changeMode(of: pattern, to: group, for: connection) }
        changeSubscriptions(fresh, adding: true, group: group, for: connection)
    }

    /// Moves a held pattern between plain and a group, or between groups: counts and the cluster's interest
    /// stay as they are.
    func changeMode(of pattern: String, to group: String?, for connection: ClientConnection) {
        if let old = connection.extras?.groupOfPattern[pattern] {
            index.leave(connection, group: old, pattern: pattern)
        } else {
            index.unsubscribe(connection, from: pattern)
        }
        if let group {
            connection.madeExtras.groupOfPattern[pattern] = group
            index.join(connection, group: group, pattern: pattern)
        } else {
            connection.extras?.groupOfPattern[pattern] = nil
            index.subscribe(connection, to: pattern)
        }
    }

    /// `UNSUB`: drops the named patterns the connection holds (all of them when none are named).
    func unsubscribe(_ connection: ClientConnection, from patterns: [String]) {
        changeSubscriptions(patterns.isEmpty ? Array(connection.subscriptions) : patterns, adding: false,
                            for: connection)
    }

    /// Adds patterns the connection does not hold yet, in both directions and the count.
    func addSubscriptions(_ patterns: [String], group: String? = nil, for connection: ClientConnection) {
        let wasUnsubscribed = connection.subscriptions.isEmpty
        for pattern in patterns {
            connection.subscriptions.insert(pattern)
            if let group {
                connection.madeExtras.groupOfPattern[pattern] = group
                index.join(connection, group: group, pattern: pattern)
            } else {
                index.subscribe(connection, to: pattern)
            }
        }
        connections.subscriptionCount += patterns.count
        engineSubscriptionsChanged(patterns, adding: true)
        if wasUnsubscribed && !patterns.isEmpty { updateReadTimeout(of: connection) }
    }

    /// Removes each of `patterns` that the connection holds, in both directions and the count; returns how
    /// many it held. Emptied patterns wait for the index's sweep.
    @discardableResult
    func removeSubscriptions(_ patterns: [String], for connection: ClientConnection) -> Int {
        var dropped = 0
        for pattern in patterns where connection.subscriptions.remove(pattern) != nil {
            if let group = connection.extras?.groupOfPattern.removeValue(forKey: pattern) {
                index.leave(connection, group: group, pattern: pattern)
            } else {
                index.unsubscribe(connection, from: pattern)
            }
            dropped += 1
            engineSubscriptionsChanged(CollectionOfOne(pattern), adding: false)
        }
        connections.subscriptionCount -= dropped
        work.staleSubscriptions += dropped
        scheduleSweep()
        if dropped > 0 && connection.subscriptions.isEmpty { updateReadTimeout(of: connection) }
        return dropped
    }

    /// A departing connection's subscriptions leave the count. The index is not touched: its weak sets stop
    /// yielding the connection as soon as it is gone, and the sweep reclaims the entries.
    func forgetSubscriptions(of connection: ClientConnection) {
        // Its subscriptions leave the engine's counts; replies it was owed are forgotten with it.
        engineSubscriptionsChanged(connection.subscriptions, adding: false)
        connections.subscriptionCount -= connection.subscriptions.count
        work.staleSubscriptions += connection.subscriptions.count
    }
}
