import FanoutProtocol

/// Subscriptions live in two directions, the subject index (pattern → weak members) and each connection's
/// own set (member → patterns), and are counted server-wide. These helpers are the only places that change
/// them, so that the three never disagree.
extension Server {
    /// `SUB`: subscribes to each pattern the connection does not hold yet, or to none if that would pass
    /// max_subscriptions. Replies with the count held afterwards.
    func subscribe(_ connection: ClientConnection, to patterns: [String]) {
        // A set, not a scan of what came before: a 64 KiB line holds thousands of patterns.
        var fresh: [String] = []
        var seen = Set<String>(minimumCapacity: patterns.count)
        for pattern in patterns where !connection.subscriptions.contains(pattern) && seen.insert(pattern).inserted {
            fresh.append(pattern)
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
        if indexWouldPassMemoryBound(adding: fresh.count) {
            stats.limitRefusals += 1
            connection.send(ProtocolError(.limit, "the server is at max_memory=\(configuration.limits.maxMemory)").line)
            return
        }
        changeSubscriptions(fresh, adding: true, for: connection)
    }

    /// `UNSUB`: drops the named patterns the connection holds (all of them when none are named).
    func unsubscribe(_ connection: ClientConnection, from patterns: [String]) {
        changeSubscriptions(patterns.isEmpty ? Array(connection.subscriptions) : patterns, adding: false,
                            for: connection)
    }

    /// Adds patterns the connection does not hold yet, in both directions and the count.
    func addSubscriptions(_ patterns: [String], for connection: ClientConnection) {
        let wasUnsubscribed = connection.subscriptions.isEmpty
        for pattern in patterns {
            connection.subscriptions.insert(pattern)
            index.subscribe(connection, to: pattern)
        }
        connections.subscriptionCount += patterns.count
        if cluster != nil { clusterSubscriptionsChanged(patterns, adding: true) }
        if wasUnsubscribed && !patterns.isEmpty { updateReadTimeout(of: connection) }
    }

    /// Removes each of `patterns` that the connection holds, in both directions and the count; returns how
    /// many it held. Emptied patterns wait for the index's sweep.
    @discardableResult
    func removeSubscriptions(_ patterns: [String], for connection: ClientConnection) -> Int {
        var dropped = 0
        for pattern in patterns where connection.subscriptions.remove(pattern) != nil {
            index.unsubscribe(connection, from: pattern)
            dropped += 1
            if cluster != nil { clusterSubscriptionsChanged(CollectionOfOne(pattern), adding: false) }
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
        if cluster != nil { clusterConnectionLeft(connection) }
        connections.subscriptionCount -= connection.subscriptions.count
        work.staleSubscriptions += connection.subscriptions.count
    }
}
