import FanoutRedis

/// Groups across nodes: each message of a group's subject goes to one member cluster-wide. Every node with
/// members of the group receives the message from Redis; each claims the run of seqs it received on the
/// subject's shard, and only the node whose claim takes them delivers them to one of its members.
///
/// The claim is one key per subject and group, `fanout:{<subject>}:group:<group>` = `<epoch> <highest seq
/// claimed>`: nodes receive a subject's messages in one order, so a claim of seqs `first...last` takes the
/// ones above the highest claimed so far, and the node delivers only those. (Nodes may gather different runs
/// from the same messages, so claims can overlap in part: each seq still goes to one node.)
///
/// Whose turn it is: first come would give every run to the node whose claims reach the shard first (an idle
/// node beats the one busy reading the publisher: it took all 2,000 of a test's jobs), whatever members each
/// node holds. So each claim carries the node's member count for the group, kept beside the claim key in
/// `fanout:{<subject>}:groupturn:<group>` (a hash: each node's count, when it last claimed, and the messages it
/// took); a run goes to the node that took the fewest messages per member, among the nodes that claimed within
/// `turnFreshMilliseconds`, so every member takes an even share whatever node it is on. A node whose turn it is
/// not is told to wait: the run is kept for the turn's node for `turnWaitMilliseconds`, and the waiting node
/// claims again after that, taking the run if the turn's node has not (it left, or lost its members). A run
/// waiting so (`fanout:{<subject>}:groupwait:<group>`, by first seq) is never skipped by a later run's claim
/// until its wait is long over, so no message is lost to a turn. Cost: one EVAL per run per group per node,
/// and a second from each node that waited; O(nodes) in Redis.
extension RedisEngine {
    /// How long a run is kept for the node whose turn it is before a waiting node may take it.
    public static let turnWaitMilliseconds: Int64 = 200
    /// How soon a claim behind a waiting run is made again.
    public static let behindMilliseconds: Int64 = 5
    /// A node that has not claimed for this long takes no turns.
    static let turnFreshMilliseconds: Int64 = 2000

    // KEYS: the claim, the turns (per node n: `w:n` members, `t:n` last claim in ms, `s:n` messages taken), the
    // runs waiting to be claimed again (scored by their first seq). ARGV: epoch, first, last, expiry ms, node,
    // members, taking over (1/0), fresh ms, wait ms. Returns the seq after which the run is this node's, -1
    // when it is all taken, -2 when it is another node's turn (claim again, taking over, after the wait), -3
    // when a run below it waits (claim again soon, as before).
    static let claimScript = """
        local held = redis.call('GET', KEYS[1])
        local high = 0
        if held then
          local epoch, seq = string.match(held, '^(%S+) (%d+)$')
          if epoch == ARGV[1] then high = tonumber(seq) end
        end
        local node = ARGV[5]
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local fresh = tonumber(ARGV[8])
        local wait = tonumber(ARGV[9])
        local first = tonumber(ARGV[2])
        local function waitAgain(outcome)
          redis.call('ZADD', KEYS[3], first, first .. ':' .. node .. ':' .. (now + 4 * wait))
          redis.call('PEXPIRE', KEYS[3], 60000)
          return outcome
        end
        -- The nodes in the turns: fresh ones with members; a node gone a minute is forgotten.
        local fields = redis.call('HGETALL', KEYS[2])
        local nodes = {}
        for i = 1, #fields, 2 do
          local kind, name = string.match(fields[i], '^(%a):(.+)$')
          if kind then
            nodes[name] = nodes[name] or {w = 0, t = 0, s = 0}
            nodes[name][kind] = tonumber(fields[i + 1])
          end
        end
        for name, entry in pairs(nodes) do
          if now - entry.t > 60000 then
            redis.call('HDEL', KEYS[2], 'w:' .. name, 't:' .. name, 's:' .. name)
            nodes[name] = nil
          end
        end
        -- Even a claim that comes too late counts the node in the turns: it holds members and claims. A node new
        -- to them starts level with the others, not owed what they took before it came.
        if not nodes[node] then
          local level = nil
          for _, entry in pairs(nodes) do
            if entry.w > 0 and now - entry.t <= fresh and (level == nil or entry.s / entry.w < level) then
              level = entry.s / entry.w
            end
          end
          nodes[node] = {s = math.floor((level or 0) * tonumber(ARGV[6]))}
          redis.call('HSET', KEYS[2], 's:' .. node, nodes[node].s)
        end
        nodes[node].w = tonumber(ARGV[6])
        nodes[node].t = now
        redis.call('HSET', KEYS[2], 'w:' .. node, ARGV[6], 't:' .. node, now)
        redis.call('PEXPIRE', KEYS[2], 60000)
        if tonumber(ARGV[3]) <= high then return -1 end
        -- A run below this one that a node waits to claim again must not be skipped: wait behind it, unless
        -- its wait is long over (that node left).
        if first > high + 1 then
          local below = redis.call('ZRANGEBYSCORE', KEYS[3], high + 1, first - 1)
          for _, entry in ipairs(below) do
            if now < tonumber(string.match(entry, ':(%d+)$')) then return waitAgain(-3) end
            redis.call('ZREM', KEYS[3], entry)
          end
        end
        if ARGV[7] ~= '1' then
          -- Whose turn: the fresh node that took the fewest messages per member (ties to the smaller name).
          local best, bestShare = node, nil
          for name, entry in pairs(nodes) do
            if entry.w > 0 and now - entry.t <= fresh then
              local share = entry.s / entry.w
              if bestShare == nil or share < bestShare or (share == bestShare and name < best) then
                best, bestShare = name, share
              end
            end
          end
          if best ~= node then return waitAgain(-2) end
        end
        redis.call('HINCRBY', KEYS[2], 's:' .. node, tonumber(ARGV[3]) - high)
        redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[3])
        redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[3], 'PX', ARGV[4])
        return high
        """

    /// What a claim of a group's run got.
    public enum ClaimOutcome: Sendable, Equatable {
        /// This node delivers the run's messages above `after`.
        case won(after: UInt64)
        /// Another node has them all, or the shard could not answer (then nobody delivers them).
        case lost
        /// It is another node's turn: claim again after `turnWaitMilliseconds` with `takingOver`, to take
        /// whatever that node has not taken.
        case wait
        /// A run below this one waits for its claim: claim again as before after `behindMilliseconds`.
        case behind
    }

    /// Claims the messages `first...last` of `subject` (under `epoch`) for `group` on this node, which holds
    /// `members` of the group (its weight in the turns); `takingOver` after a `.wait`.
    public func claim(subject: String, group: String, epoch: String, first: UInt64, last: UInt64, members: Int,
                      takingOver: Bool = false, reply: @escaping (ClaimOutcome) -> Void) {
        let key = "fanout:{\(subject)}:group:\(group)"
        let turns = "fanout:{\(subject)}:groupturn:\(group)"
        let waiting = "fanout:{\(subject)}:groupwait:\(group)"
        let command = RedisCommand.encode(["EVAL", Self.claimScript, "3", key, turns, waiting, epoch, String(first),
                                           String(last), String(expiryMilliseconds(rule(for: subject))), nodeID,
                                           String(members), takingOver ? "1" : "0",
                                           String(Self.turnFreshMilliseconds), String(Self.turnWaitMilliseconds)])
        let refusal = shard(of: subject).send(command) { result in
            guard case .success(.integer(let high)) = result else { return reply(.lost) }
            if high >= 0 { return reply(.won(after: UInt64(high))) }
            reply(high == -2 ? .wait : high == -3 ? .behind : .lost)
        }
        if refusal != nil { reply(.lost) }
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
