import FanoutProtocol

extension Server {
    /// At most this many entries in a CHANNELS or CLIENTS line; the count before them is the total.
    static let listingLimit = 1000

    func infoFields() -> String {
        let uptime = (ContinuousClock.now - lifecycle.startedAt).components.seconds
        let history = local.historyFigures
        let fields: [(String, String)] = [
            ("version", FanoutVersion.current),
            ("server_name", configuration.serverName),
            ("uptime_s", String(uptime)),
            ("clients", String(connections.count)),
            ("connection_objects", String(connections.census.alive)),
            ("subjects", String(index.storedPatternCount)),
            ("subscriptions", String(connections.subscriptionCount)),
            ("published", String(stats.published)),
            ("delivered", String(stats.delivered)),
            ("slow_consumers", String(stats.slowConsumers)),
            ("backpressure_pauses", String(stats.backpressurePauses)),
            ("limit_refusals", String(stats.limitRefusals)),
            ("connections_total", String(stats.accepted)),
            ("tracked_subjects", String(engine.trackedSubjects)),
            ("epoch", engine.epoch),
            ("history_subjects", String(history.subjects)),
            ("history_messages", String(history.messages)),
            ("history_bytes", String(history.bytes)),
            ("history_evicted", String(history.evicted)),
            ("replayed", String(stats.replayed)),
            ("replays_active", String(work.replayJobs.count { $0.connection.socket != nil })),
            ("replays_waiting", String(work.replaysAwaitingDrain)),
            ("max_connections", String(configuration.limits.maxConnections)),
            ("max_pending_bytes", String(configuration.limits.maxPendingBytes)),
            ("max_memory", String(configuration.limits.maxMemory)),
            ("backlog_bytes", String(memory.backlogWatch.lastQueued)),
            ("index_bytes_estimate", String(indexBytes)),
            ("memory_drops", String(memory.backlogWatch.drops)),
            ("groups", String(index.groupSetCount)),
            ("group_deliveries", String(stats.groupDeliveries)),
            ("group_paced_runs", String(stats.groupPacedRuns)),
            ("binary_published", String(stats.binaryPublished)),
            ("open_questions", String(questions.byNumber.count)),
            ("questions", String(stats.questions)),
            ("answers", String(stats.answers)),
            ("ask_timeouts", String(stats.askTimeouts)),
        ] + (cluster?.infoFields() ?? [])
        return (fields + historyDiskInfoFields()).map { "\($0.0)=\($0.1)" }.joined(separator: " ")
    }

    /// `<count> id=<n>,addr=<host:port>,subs=<n>,pending=<bytes>,age_s=<n>,transport=<tcp|tls|unix|ws> ...`, oldest first.
    ///
    /// Cost: a scan of the connection table (at most max_connections ids, sorted as plain integers) and text
    /// for the `listingLimit` listed.
    func clientsListing() -> String {
        let now = ContinuousClock.now
        let oldest = connections.ids.sorted().prefix(Self.listingLimit)
        let listed = oldest.compactMap { connections[$0] }.map { connection in
            let age = (now - connection.connectedAt).components.seconds
            return "id=\(connection.id),addr=\(connection.peer),subs=\(connection.subscriptions.count)," +
                "pending=\(connection.pendingBytes),age_s=\(age),transport=\(connection.transport)"
        }
        return ([String(connections.count)] + listed).joined(separator: " ")
    }
}
