import FanoutEngine
import FanoutEventLoop
import FanoutRedisEngine
import Logging

/// What a cluster node needs from the server: the configuration, the loop and logger, the fan-out its engine
/// delivers to, the connections whose subscriptions it carries over, the questions it hands Redis's events to,
/// the replies its engine owes, the stats INFO reports, and the engine seam it takes over while it runs
/// (`engine`, `cluster`).
protocol ClusterHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var loop: EventLoop { get }
    var fanout: Fanout<Server> { get }
    var connections: ConnectionTable { get }
    var stats: ServerStats { get }
    var questions: QuestionDesk { get }
    var replies: ReplyOrder { get }
    var lifecycle: Lifecycle! { get }
    var engine: any Engine { get set }
    var localHistory: any LocalHistory { get }
    var cluster: ClusterNode? { get set }
    /// Presence, whose directory the node becomes (`ClusterNode+Presence.swift`), and the users it names.
    var presence: Presence { get }
    var auth: Authenticator { get }
}

/// A node's part in a cluster (`cluster:`), besides the engine seam the publish path uses: what only several
/// nodes have, namely the Redis engine's start and stop (`ClusterNode+Engine`), groups' claims, shard status
/// and their counts for INFO (`ClusterNode+Info`); questions across nodes are the `QuestionDesk`'s. Absent on a
/// standalone server, whose publish path never looks here.
final class ClusterNode {
    unowned let host: any ClusterHost
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

    init(host: any ClusterHost, engine: RedisEngine, settings: ClusterSettings) {
        self.host = host
        self.engine = engine
        self.settings = settings
    }
}
