import FanoutRedis

extension ClusterNode {
    /// INFO's cluster fields: this node's id, the shards and, per shard, its status, commands in flight and
    /// milliseconds since its last heartbeat came back.
    func infoFields() -> [(String, String)] {
        let stats = host.stats
        var fields: [(String, String)] = [
            ("cluster_node", engine.nodeID),
            ("cluster_shards", String(engine.shards.count)),
            ("cluster_subjects", String(engine.subscribedSubjects)),
            ("cluster_globs", String(engine.subscribedGlobs)),
            ("cluster_unavailable", String(stats.unavailable)),
            ("cluster_outcome_unknown", String(stats.outcomeUnknown)),
            ("cluster_resets", String(stats.resets)),
            ("cluster_group_claims_won", String(groupClaimsWon)),
            ("cluster_group_claims_lost", String(groupClaimsLost)),
            ("cluster_group_claims_waited", String(groupClaimsWaited)),
            ("cluster_group_handbacks", String(groupHandBacks)),
            ("cluster_group_handbacks_taken", String(groupHandBacksTaken)),
            ("cluster_group_handbacks_dropped", String(groupHandBacksDropped)),
            ("cluster_questions_held", String(host.questions.remote.count)),
            ("cluster_presence_members", String(engine.presenceMembershipsHeld)),
            ("cluster_presence_lost", String(engine.presenceLostAnnounced)),
        ]
        let now = ContinuousClock.now
        for shard in engine.shards {
            var heartbeat = "none"
            if let last = shard.lastHeartbeat {
                let since = (now - last).components
                let milliseconds: Int64 = since.seconds * 1000 + since.attoseconds / 1_000_000_000_000_000
                heartbeat = String(milliseconds)
            }
            let prefix = "shard\(shard.index)"
            fields += [
                (prefix, shard.endpoint.description),
                (prefix + "_status", shard.status.name),
                (prefix + "_epoch", engine.shardEpoch(shard.index) ?? "pending"),
                (prefix + "_in_flight", String(shard.inFlight)),
                (prefix + "_heartbeat_ms", heartbeat),
            ]
        }
        return fields
    }
}
