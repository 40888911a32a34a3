import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutRedis
import FanoutRedisEngine

/// Starting, restarting and stopping the cluster engine.
extension Server {
    /// Starts the Redis engine when the configuration has a `cluster` section.
    func startCluster() {
        guard let settings = configuration.cluster else { return }
        let endpoints: [RedisEndpoint]
        do {
            endpoints = try settings.endpoints()
        } catch {
            logger.error("cluster: \(error)")
            return
        }
        let engine = RedisEngine(loop: loop, settings: .init(
            endpoints: endpoints, rules: configuration.history.rules, idleExpiry: settings.idleExpiry,
            maxInFlight: settings.maxInFlight,
            timing: RedisShard.Timing(heartbeat: settings.heartbeat, deadAfter: settings.downAfter,
                                     maxRetry: settings.downAfter)))
        let node = ClusterNode(engine: engine, settings: settings)
        engine.deliveries = fanout
        engine.onQuestion = { [unowned self] event in self.clusterQuestionEvent(event) }
        engine.onHandBack = { [unowned self] message in self.fanout.receiveHandedBack(message) }
        engine.onShardStatus = { [unowned self] shard in
            switch shard.status {
            case .up: self.logger.notice("cluster: shard \(shard.index) \(shard.endpoint) up")
            case .connecting: self.logger.info("cluster: shard \(shard.index) \(shard.endpoint) connecting")
            case .down(let reason): self.logger.warning("cluster: shard \(shard.index) \(shard.endpoint) down: \(reason)")
            }
        }
        node.newEpochLog = LogThrottle(loop: loop) { [unowned self] count, subjects in
            let named = subjects.joined(separator: ", ")
            self.logger.warning("cluster: \(count) more subject(s) continued under a new epoch, among them \(named)")
        }
        engine.onNewEpoch = { [unowned self, unowned node] subject, epoch in
            // A shard's own new epoch is always worth a line; its subjects' are one line per interval.
            guard subject.hasPrefix("shard ") || node.newEpochLog?.shouldWrite(from: subject) != false else { return }
            self.logger.warning("cluster: \(subject) continues under a new epoch \(epoch) (its numbering restarted)")
        }
        cluster = node
        self.engine = engine
        fanout.claimsGroups = true
        if connections.subscriptionCount > 0 { fanout.engineChanged() }
        // Messages from Redis come one by one as hiredis reads them: a pass's messages of one subject form one
        // run, written out when the pass ends.
        loop.afterEachPass = { [unowned self] in self.fanout.close() }
        // Subscriptions already held (after a restart of the engine) are subscribed in Redis again.
        for connection in connections.values {
            for pattern in connection.subscriptions { engine.retain(pattern: pattern) }
        }
        engine.start()
        let shards = endpoints.map(\.description).joined(separator: ", ")
        logger.notice("cluster: node \(engine.nodeID) with \(endpoints.count) shard(s): \(shards)")
    }

    /// SIGHUP with a changed `cluster` section: the engine stops (PUBs waiting on it answer
    /// `-ERR unavailable`, outcome unknown) and a new one starts with the new shards. Connections stay, with
    /// their subscriptions, which the new engine subscribes in Redis again.
    func restartCluster() {
        stopCluster()
        startCluster()
    }

    func stopCluster() {
        guard let node = cluster else { return }
        // While the node is still the server's: the PUBs and replays waiting on Redis are answered now
        // (`-ERR unavailable`, outcome unknown), in order, and commands held behind them run.
        node.engine.stop()
        fanout.close()
        loop.afterEachPass = nil
        // The local engine first, so that the reference never names the Redis engine once nothing owns it.
        engine = localHistory
        cluster = nil
        fanout.claimsGroups = false
        if connections.subscriptionCount > 0 && !lifecycle.isShuttingDown { fanout.engineChanged() }
        for connection in connections.values where connection.extras?.pendingReplies != nil {
            connection.extras?.pendingReplies = nil
            connection.resumeReading(.engineHold)
        }
    }
}
