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

/// Hand-back: the node whose claim took a group's messages may find, when the claim comes back, that its
/// members have all left meanwhile. It hands each such message back to the other nodes: one PUBLISH on
/// `fanout:groups:handback` (first shard; every node subscribes), `<attempt> <epoch> <seq> <group> <subject>
/// <payload>`. Each node with a live member of the group claims the message with `SET NX` of
/// `fanout:{<subject>}:handback:<group>:<epoch>:<seq>:<attempt>`, and the winner delivers it; a winner that
/// lost its members too hands it back again, up to `handBackAttempts` times. Cost, only on that rare path:
/// one PUBLISH per message handed back, and one SET per node holding members of the group.
extension RedisEngine {
    /// A group's message handed back by the node that claimed it and could not place it.
    public struct HandedBack: Sendable, Equatable {
        public let subject: String
        public let group: String
        public let epoch: String
        public let seq: UInt64
        /// 0 the first time the message is handed back, 1 the second, and so on.
        public let attempt: Int
        public let payload: [UInt8]

        public init(subject: String, group: String, epoch: String, seq: UInt64, attempt: Int, payload: [UInt8]) {
            self.subject = subject
            self.group = group
            self.epoch = epoch
            self.seq = seq
            self.attempt = attempt
            self.payload = payload
        }
    }

    /// How many times one message is handed back at most: each time, every member of its group on the node
    /// that won it left within one round trip to Redis.
    public static let handBackAttempts = 4
    static let handBackChannel = Array("fanout:groups:handback".utf8)

    /// Hands `message` back to every node (this one included); false when the first shard cannot take it.
    public func handBack(_ message: HandedBack) -> Bool {
        var body = Array("\(message.attempt) \(message.epoch) \(message.seq) \(message.group) \(message.subject) ".utf8)
        body.append(contentsOf: message.payload)
        return shards[0].send(Self.command([Array("PUBLISH".utf8), Self.handBackChannel, body])) { _ in } == nil
    }

    /// Claims a handed-back message for this node: `reply` gets true when this node is to deliver it.
    public func claimHandedBack(_ message: HandedBack, reply: @escaping (Bool) -> Void) {
        let key = "fanout:{\(message.subject)}:handback:\(message.group):\(message.epoch):\(message.seq):\(message.attempt)"
        // Every node hears a hand-back within moments; a minute outlives any of them.
        let command = RedisCommand.encode(["SET", key, nodeID, "NX", "PX", "60000"])
        let refusal = shard(of: message.subject).send(command) { result in
            if case .success(.status) = result { return reply(true) }
            reply(false)
        }
        if refusal != nil { reply(false) }
    }

    /// A message on the hand-back channel: the message, nil for a malformed one, or nil-nil for another channel.
    static func handedBack(channel: [UInt8], payload bytes: [UInt8]) -> HandedBack?? {
        guard channel == handBackChannel else { return nil }
        let fields = bytes.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: false)
        guard fields.count == 6, let attempt = Int(String(decoding: fields[0], as: UTF8.self)),
              let seq = UInt64(String(decoding: fields[2], as: UTF8.self)) else { return .some(nil) }
        return HandedBack(subject: String(decoding: fields[4], as: UTF8.self), group: String(decoding: fields[3], as: UTF8.self),
                          epoch: String(decoding: fields[1], as: UTF8.self), seq: seq, attempt: attempt,
                          payload: Array(fields[5]))
    }
}
