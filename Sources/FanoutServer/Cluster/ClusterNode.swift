import DequeModule
import FanoutEventLoop
import FanoutRedis
import FanoutRedisEngine

/// A node's part in a cluster (`cluster:`): the Redis engine and, per connection, the replies of PUBs that
/// Redis has not answered yet. Absent on a standalone server, whose publish path never looks here.
final class ClusterNode {
    /// One connection's replies in command order: a PUB's slot is filled when its script answers, and filled
    /// slots at the front are sent. A later command that is not a PUB waits (`deferred`) until they are out.
    final class PendingReplies: PublishReceipts {
        unowned let server: Server
        weak var node: ClusterNode?
        weak var connection: ClientConnection?
        var slots = Deque<[UInt8]?>()
        /// The ticket of `slots.first`.
        var firstTicket: UInt64 = 0
        /// A command line read while replies were pending, executed once they are sent.
        var deferred: [UInt8]?
        /// A RESUME or LAST whose replay Redis has not answered, or a SUB waiting for its Redis subscriptions.
        var replaying = false
        /// The deferred SUB has waited for its subscriptions: it runs now, whatever their state.
        var subscribeNow = false
        /// The client closed its side with replies still pending: the connection closes once they are sent.
        var closeWhenAnswered = false

        var isBusy: Bool { !slots.isEmpty || replaying }

        init(server: Server, node: ClusterNode, connection: ClientConnection) {
            self.server = server
            self.node = node
            self.connection = connection
        }

        func published(ticket: UInt64, _ result: Result<Int64, RedisFailure>) {
            server.clusterPublished(ticket: ticket, result, pending: self)
        }
    }

    let engine: RedisEngine
    let settings: ClusterSettings
    var pending: [UInt64: PendingReplies] = [:]
    /// PUBs one connection may have waiting on Redis before the node stops reading it: a client that pipelines
    /// faster than Redis answers is held back, as a TCP window would, instead of meeting max_in_flight and
    /// its refusals alone. Several such clients together still can.
    var pipelineLimit: Int { max(16, settings.maxInFlight / 4) }

    /// The last `+OK <receivers>` line made, shared by the replies that have the same count.
    private var lastAcknowledgement: (receivers: Int64, line: [UInt8]) = (-1, [])

    /// `+OK <receivers>\n`.
    func acknowledgement(receivers: Int64) -> [UInt8] {
        if lastAcknowledgement.receivers != receivers {
            lastAcknowledgement = (receivers, Array("+OK \(receivers)\n".utf8))
        }
        return lastAcknowledgement.line
    }

    /// The connection's pending replies, made on first use.
    func replies(of connection: ClientConnection, server: Server) -> PendingReplies {
        if let known = pending[connection.id] { return known }
        let made = PendingReplies(server: server, node: self, connection: connection)
        pending[connection.id] = made
        return made
    }

    /// PUBs refused or lost since start (INFO).
    var unavailable: UInt64 = 0
    var outcomeUnknown: UInt64 = 0
    /// RESET pushes made since start: a subject's numbering restarted, or messages were lost to this node.
    var resets: UInt64 = 0
    /// Runs of a group's messages this node claimed and delivered, and runs another node took (1.2).
    var groupClaimsWon: UInt64 = 0
    var groupClaimsLost: UInt64 = 0
    /// Subjects continuing under a new epoch: after a shard lost its data, one per subject it held, so the
    /// log names the first of each interval and sums up the rest.
    var newEpochLog: LogThrottle?

    init(engine: RedisEngine, settings: ClusterSettings) {
        self.engine = engine
        self.settings = settings
    }
}
