import FanoutRedis

extension RedisEngine {
    /// What the engine keeps per shard besides the shard's own connection state.
    struct ShardState {
        /// The shard epoch, once a connection has checked it (`EngineScripts.checkEpoch`).
        var epoch: String?
        /// Globs whose PSUBSCRIBE is in effect, with the channel prefix each covers, sorted by glob.
        var activeGlobs: [(glob: [UInt8], prefix: [UInt8])] = []
        /// What waits for a glob's PSUBSCRIBE to take effect.
        var globWaiters: [[UInt8]: [(Bool) -> Void]] = [:]
        /// Channels let go because a glob covers them, whose UNSUBSCRIBE has not taken effect yet: until it
        /// has, the node counts twice in PUBLISH's reply.
        var leaving: Set<[UInt8]> = []
        /// What waits for a glob that took effect until the channels it replaces have left.
        var afterLeaving: [(prefix: [UInt8], waiter: (Bool) -> Void)] = []
        /// Wildcard-only subjects with history holding their live messages after a reconnection, until a
        /// glob that covers them is in effect again and their gap is filled.
        var fillingThroughGlobs: [(subject: String, position: SubjectPosition)] = []

        /// Forgets what held while the shard was connected; returns the waiters to fail.
        mutating func disconnected() -> [(Bool) -> Void] {
            activeGlobs.removeAll()
            leaving.removeAll()
            var failing = afterLeaving.map(\.waiter)
            afterLeaving.removeAll()
            failing += globWaiters.values.flatMap { $0 }
            globWaiters.removeAll()
            return failing
        }
    }
}
