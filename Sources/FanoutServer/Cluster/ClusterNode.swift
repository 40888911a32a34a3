import FanoutEventLoop
import FanoutRedisEngine

/// A node's part in a cluster (`cluster:`), besides the engine seam the publish path uses: what only several
/// nodes have, namely questions across nodes, groups' claims, shard status and their counts. Absent on a
/// standalone server, whose publish path never looks here.
final class ClusterNode {
    let engine: RedisEngine
    let settings: ClusterSettings
    /// PUBs one connection may have waiting on Redis before the node stops reading it.
    var pipelineLimit: Int { max(16, settings.maxInFlight / 4) }

    /// Runs of a group's messages this node claimed and delivered, and runs another node took (1.2).
    var groupClaimsWon: UInt64 = 0
    var groupClaimsLost: UInt64 = 0
    /// Claims told to wait for another node's turn, and the timers that claim those runs again: one per run
    /// waiting, each gone within `RedisEngine.turnWaitMilliseconds`.
    var groupClaimsWaited: UInt64 = 0
    var turnRetries: [Int: LoopTimer] = [:]
    var nextTurnRetry = 0
    /// Claimed messages of a group handed back because this node's members had all left (sent), handed-back
    /// messages this node's claim took, and messages handed back too often to try again.
    var groupHandBacks: UInt64 = 0
    var groupHandBacksTaken: UInt64 = 0
    var groupHandBacksDropped: UInt64 = 0
    /// Subjects continuing under a new epoch: after a shard lost its data, one per subject it held, so the
    /// log names the first of each interval and sums up the rest.
    var newEpochLog: LogThrottle?

    init(engine: RedisEngine, settings: ClusterSettings) {
        self.engine = engine
        self.settings = settings
    }
}
