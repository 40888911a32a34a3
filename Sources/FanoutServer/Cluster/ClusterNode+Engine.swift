import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutRedis
import FanoutRedisEngine

/// Starting, restarting and stopping the cluster engine.
extension ClusterNode {
    /// Starts the Redis engine when the configuration has a `cluster` section: the node it makes becomes the
    /// host's `cluster`, and its engine the host's `engine`.
    static func start(for host: any ClusterHost) {
        guard let settings = host.configuration.cluster else { return }
        let logger = host.logger
        let loop = host.loop
        let fanout = host.fanout
        let endpoints: [RedisEndpoint]
        do {
            endpoints = try settings.endpoints()
        } catch {
            logger.error("cluster: \(error)")
            return
        }
        let engine = RedisEngine(loop: loop, settings: .init(
            endpoints: endpoints, rules: host.configuration.history.rules, idleExpiry: settings.idleExpiry,
            maxInFlight: settings.maxInFlight,
            timing: RedisShard.Timing(heartbeat: settings.heartbeat, deadAfter: settings.downAfter,
                                     maxRetry: settings.downAfter),
            presenceLease: settings.presenceLease))
        let node = ClusterNode(host: host, engine: engine, settings: settings)
        engine.deliveries = fanout
        // The server and its fan-out outlive the engine, which a callback may keep past its node.
        engine.onQuestion = { [unowned host] event in host.questions.clusterQuestionEvent(event) }
        engine.onHandBack = { [unowned fanout] message in fanout.receiveHandedBack(message) }
        engine.onShardStatus = { [unowned host] shard in
            let logger = host.logger
            switch shard.status {
            case .up: logger.notice("cluster: shard \(shard.index) \(shard.endpoint) up")
            case .connecting: logger.info("cluster: shard \(shard.index) \(shard.endpoint) connecting")
            case .down(let reason): logger.warning("cluster: shard \(shard.index) \(shard.endpoint) down: \(reason)")
            }
        }
        node.newEpochLog = LogThrottle(loop: loop) { [unowned host] count, subjects in
            let named = subjects.joined(separator: ", ")
            host.logger.warning(
                "cluster: \(count) more subject(s) continued under a new epoch, among them \(named)")
        }
        engine.onNewEpoch = { [unowned node] subject, epoch in
            // A shard's own new epoch is always worth a line; its subjects' are one line per interval.
            guard subject.hasPrefix("shard ") || node.newEpochLog?.shouldWrite(from: subject) != false else { return }
            node.host.logger.warning(
                "cluster: \(subject) continues under a new epoch \(epoch) (its numbering restarted)")
        }
        host.cluster = node
        host.engine = engine
        node.startPresence()
        fanout.claimsGroups = true
        if host.connections.subscriptionCount > 0 { fanout.engineChanged() }
        // Messages from Redis come one by one as hiredis reads them: a pass's messages of one subject form one
        // run, written out when the pass ends.
        loop.afterEachPass = { [unowned fanout] in fanout.close() }
        // Subscriptions already held (after a restart of the engine) are subscribed in Redis again.
        for connection in host.connections.values {
            for pattern in connection.subscriptions { engine.retain(pattern: pattern) }
        }
        engine.start()
        let shards = endpoints.map(\.description).joined(separator: ", ")
        logger.notice("cluster: node \(engine.nodeID) with \(endpoints.count) shard(s): \(shards)")
    }

    /// SIGHUP with a changed `cluster` section: the engine stops (PUBs waiting on it answer
    /// `-ERR unavailable`, outcome unknown) and a new one starts with the new shards. Connections stay, with
    /// their subscriptions, which the new engine subscribes in Redis again.
    static func restart(for host: any ClusterHost) {
        host.cluster?.stop()
        start(for: host)
    }

    /// Stops the engine and hands the host back its local engine; the node is no longer the host's.
    func stop() {
        let fanout = host.fanout
        stopPresence()
        // While the node is still the server's: the PUBs and replays waiting on Redis are answered now
        // (`-ERR unavailable`, outcome unknown), in order, and commands held behind them run.
        engine.stop()
        fanout.close()
        host.loop.afterEachPass = nil
        // The local engine first, so that the reference never names the Redis engine once nothing owns it.
        host.engine = host.localHistory
        host.cluster = nil
        fanout.claimsGroups = false
        if host.connections.subscriptionCount > 0 && !host.lifecycle.isShuttingDown { fanout.engineChanged() }
        host.replies.engineLeft(host.connections)
    }
}
