#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FanoutEventLoop

/// This node's presence memberships as Redis should hold them, per shard, and the upkeep around them (lease,
/// writing again after an outage, lost nodes being announced). The node's own table is the truth: Redis is
/// written again from this ledger whenever a shard comes back, idempotently.
final class PresenceLedger {
    /// One membership of a local connection in a subject kept on some shard.
    struct Membership {
        let subject: String
        let connection: UInt64
        /// Join order across nodes: wall-clock milliseconds × 1000, or one more than this node's previous join
        /// when that is higher, so a node's joins keep their order whatever their rate (`nextScore`; exact in a
        /// Double until the year 2255).
        let score: Double
        /// `<join ms> <member text with since_s=0>`, as `fanout:{<subject>}:whom` keeps it.
        let info: String
    }

    /// Per shard, `<id> <subject>` -> membership. Worst case: one entry per membership of a local connection
    /// in a kept subject (each subject at most 245 bytes, `PresenceText.longestSubject`); per entry about 250
    /// bytes (the entry at the dictionary's load, three string buffers) plus twice the subject's length plus the
    /// user's and group's names. Nothing while the node keeps no presence.
    var memberships: [[String: Membership]]
    /// The score of this node's latest join.
    var lastScore: Double = 0
    /// Per shard: when it last came up here. Lost nodes are looked for on a shard only once it has been up a
    /// whole lease, so that the other nodes had time to reconnect and renew theirs after an outage.
    var upSince: [ContinuousClock.Instant?]
    /// Per shard: lost nodes whose members this node is taking and announcing (at most the number of nodes).
    var taking: [Set<String>]
    /// Per shard: memberships still to be written again after the shard came back, a batch per pass, and
    /// whether each is to be announced as a join again (the node had been declared lost).
    var rewriting: [(pending: [Membership], announce: Bool)]
    /// Per shard: the cursor of the sweep that removes memberships Redis still holds but this node no longer
    /// does (left while the shard was away), or nil when none runs.
    var sweeping: [String?]
    /// Fires every heartbeat: lease renewal and the lost-node check.
    var heartbeat: LoopTimer?
    /// Fires the next batch of a rewrite or sweep in a later pass.
    var upkeep: LoopTimer?
    /// Lost members announced (INFO).
    var lostAnnounced: UInt64 = 0

    init(shards: Int) {
        memberships = Array(repeating: [:], count: shards)
        upSince = Array(repeating: nil, count: shards)
        taking = Array(repeating: [], count: shards)
        rewriting = Array(repeating: ([], false), count: shards)
        sweeping = Array(repeating: nil, count: shards)
    }

    /// Wall-clock milliseconds: join times are compared across nodes (clocks kept in step, NTP).
    static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    static func key(_ connection: UInt64, _ subject: String) -> String { "\(connection) \(subject)" }

    /// The next join's score: its millisecond × 1000, past the previous join's. More than 1,000 joins in one
    /// millisecond run ahead of the clock by a fraction of a millisecond each, caught up as soon as they slow.
    func nextScore(milliseconds: Int64) -> Double {
        lastScore = max(Double(milliseconds) * 1000, lastScore + 1)
        return lastScore
    }

    var isEmpty: Bool { memberships.allSatisfy(\.isEmpty) }
}
