import FanoutRedis

/// Groups across nodes: each message of a group's subject goes to one member cluster-wide. Every node with
/// members of the group receives the message from Redis; each claims the run of seqs it received on the
/// subject's shard, and only the node whose claim takes them delivers them to one of its members.
///
/// The claim is one key per subject and group, `fanout:{<subject>}:group:<group>` = `<epoch> <highest seq
/// claimed>`: nodes receive a subject's messages in one order, so a claim of seqs `first...last` takes the
/// ones above the highest claimed so far, and the node delivers only those. (Nodes may gather different runs
/// from the same messages, so claims can overlap in part: each seq still goes to one node.) Cost: one EVAL
/// per run of consecutive messages of one subject a node receives in one loop pass, per group; O(1) in Redis.
extension RedisEngine {
    static let claimScript = """
        local held = redis.call('GET', KEYS[1])
        local high = 0
        if held then
          local epoch, seq = string.match(held, '^(%S+) (%d+)$')
          if epoch == ARGV[1] then high = tonumber(seq) end
        end
        if tonumber(ARGV[3]) <= high then return -1 end
        redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[3], 'PX', ARGV[4])
        return high
        """

    /// Claims the messages `first...last` of `subject` (under `epoch`) for `group` on this node; `reply` gets
    /// the seq after which this node is to deliver them (those above it are its), or nil when another node has
    /// them all. A shard that cannot answer gets nil: nobody delivers them.
    public func claim(subject: String, group: String, epoch: String, first: UInt64, last: UInt64,
                      reply: @escaping (UInt64?) -> Void) {
        let key = "fanout:{\(subject)}:group:\(group)"
        let command = RedisCommand.encode(["EVAL", Self.claimScript, "1", key, epoch, String(first), String(last),
                                           String(expiryMilliseconds(rule(for: subject)))])
        let refusal = shard(of: subject).send(command) { result in
            if case .success(.integer(let high)) = result, high >= 0 { return reply(UInt64(high)) }
            reply(nil)
        }
        if refusal != nil { reply(nil) }
    }
}
