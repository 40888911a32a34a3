/// The Lua scripts of presence across nodes (1.3), run with EVAL (Redis keeps each compiled after its first call).
///
/// Keys, on the shard of the subject they describe (`SubjectKeys.shard`), or on every shard where a node has
/// members for the node's own keys:
/// - `fanout:{<subject>}:who`, a sorted set of the subject's members `<node>/<id>`, scored by join order
///   (`PresenceLedger.score`): ZCARD counts them in O(1), ZRANGE lists a page in O(log n + page);
/// - `fanout:{<subject>}:whom`, a hash `<node>/<id>` -> `<join ms> <member text with since_s=0>`, what renders
///   a member (user and group) and the wall-clock time it joined;
/// - `fanout:presence:node:<node>`, a sorted set of the node's memberships on this shard, `<id> <subject>`,
///   scored as above: what is removed, in join order, when the node is lost;
/// - `fanout:presence:nodes`, the set of nodes with such a record on this shard (O(nodes) per check);
/// - `fanout:presence:lease:<node>`, the node's lease, renewed every heartbeat with `presence_lease` as expiry;
/// - `fanout:presence:lost:<node>`, the claim of the one survivor that announces a lost node's members, and
///   `fanout:presence:gone:<node>`, the lost node's record, moved there by that claim and emptied a page at a
///   time.
/// Joins and leaves write all of these idempotently (ZADD, HSET, ZREM, HDEL), so a node that writes its
/// memberships again after an outage neither duplicates nor loses one.
enum PresenceScripts {
    static let nodesKey = "fanout:presence:nodes"
    static func recordKey(_ node: String) -> String { "fanout:presence:node:" + node }
    static func leaseKey(_ node: String) -> String { "fanout:presence:lease:" + node }
    static func claimKey(_ node: String) -> String { "fanout:presence:lost:" + node }
    static func goneKey(_ node: String) -> String { "fanout:presence:gone:" + node }
    static func whoKey(_ subject: String) -> String { "fanout:{" + subject + "}:who" }
    static func whomKey(_ subject: String) -> String { "fanout:{" + subject + "}:whom" }

    /// Joins (or writes again). KEYS: this node's record, the nodes set. ARGV: the node, then per membership its
    /// subject, id, score and info. O(log n) per membership.
    static let join = """
        local node = ARGV[1]
        for i = 2, #ARGV, 4 do
          local subject, id, score = ARGV[i], ARGV[i + 1], ARGV[i + 2]
          local member = node .. '/' .. id
          redis.call('ZADD', 'fanout:{' .. subject .. '}:who', score, member)
          redis.call('HSET', 'fanout:{' .. subject .. '}:whom', member, ARGV[i + 3])
          redis.call('ZADD', KEYS[1], score, id .. ' ' .. subject)
        end
        redis.call('SADD', KEYS[2], node)
        return 1
        """

    /// Leaves. KEYS: this node's record. ARGV: the node, then per membership its subject and id. O(log n) each.
    static let leave = """
        local node = ARGV[1]
        for i = 2, #ARGV, 2 do
          local subject, id = ARGV[i], ARGV[i + 1]
          local member = node .. '/' .. id
          redis.call('ZREM', 'fanout:{' .. subject .. '}:who', member)
          redis.call('HDEL', 'fanout:{' .. subject .. '}:whom', member)
          redis.call('ZREM', KEYS[1], id .. ' ' .. subject)
        end
        return 1
        """

    /// WHO. KEYS: the subject's members and their infos. ARGV: the limit. Returns {count, info1, info2, ...},
    /// oldest first. O(log n + limit).
    static let who = """
        local count = redis.call('ZCARD', KEYS[1])
        local result = {count}
        local limit = tonumber(ARGV[1])
        if limit > 0 and count > 0 then
          local members = redis.call('ZRANGE', KEYS[1], 0, limit - 1)
          local infos = redis.call('HMGET', KEYS[2], unpack(members))
          for i = 1, #members do result[#result + 1] = infos[i] or '' end
        end
        return result
        """

    /// Renews this node's lease. KEYS: the lease, this node's record. ARGV: the lease in ms. Returns 1 when the
    /// lease held; 2 when it had expired but the record is still there (nobody declared the node lost); 3 when
    /// it had expired and the record is gone (a survivor took it, or the shard lost its data): the node's
    /// members here were announced lost, or never written.
    static let renew = """
        if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 1 then return 1 end
        redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
        if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
        return 3
        """

    /// Finds the nodes with members on this shard whose lease expired, and claims each for the caller unless
    /// another survivor holds its claim (`SET NX` semantics, in one script: exactly one claimant). The claim
    /// moves the lost node's record to its `gone` set, which the claimant empties a page at a time
    /// (`takeLost`). KEYS: the nodes set. ARGV: the caller, the claim's expiry in ms. Returns the nodes the
    /// caller now holds the claim of (new ones, and its own unfinished ones). O(nodes) plus one RENAME each.
    static let claimLost = """
        local me, ttl = ARGV[1], ARGV[2]
        local mine = {}
        for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
          if node ~= me and redis.call('EXISTS', 'fanout:presence:lease:' .. node) == 0 then
            local record, gone = 'fanout:presence:node:' .. node, 'fanout:presence:gone:' .. node
            local claim = 'fanout:presence:lost:' .. node
            local owner = redis.call('GET', claim)
            if owner == me then
              mine[#mine + 1] = node
            elseif not owner then
              local hasRecord = redis.call('EXISTS', record) == 1
              local hasGone = redis.call('EXISTS', gone) == 1
              if hasRecord or hasGone then
                redis.call('SET', claim, me, 'PX', ttl)
                if hasRecord and hasGone then
                  redis.call('ZUNIONSTORE', gone, 2, gone, record, 'AGGREGATE', 'MIN')
                  redis.call('DEL', record)
                elseif hasRecord then
                  redis.call('RENAME', record, gone)
                end
                mine[#mine + 1] = node
              else
                redis.call('SREM', KEYS[1], node)
              end
            end
          end
        end
        return mine
        """

    /// Takes a page of a lost node's memberships, oldest first, and removes them from their subjects. A
    /// membership its node wrote again since (it came back, `renew` answered 3) is left alone and not
    /// announced: the node announced it afresh. KEYS: the node's gone set, its claim, its record. ARGV: the
    /// caller, the page size, the claim's expiry in ms, the lost node. Returns {-1} when the caller no longer
    /// holds the claim, else {done (1/0), subject1, info1, ...}. O(page × log n).
    static let takeLost = """
        if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {-1} end
        redis.call('PEXPIRE', KEYS[2], ARGV[3])
        local entries = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
        local result = {0}
        for _, entry in ipairs(entries) do
          redis.call('ZREM', KEYS[1], entry)
          if not redis.call('ZSCORE', KEYS[3], entry) then
            local space = string.find(entry, ' ', 1, true)
            local id, subject = string.sub(entry, 1, space - 1), string.sub(entry, space + 1)
            local member = ARGV[4] .. '/' .. id
            local whom = 'fanout:{' .. subject .. '}:whom'
            local info = redis.call('HGET', whom, member)
            redis.call('ZREM', 'fanout:{' .. subject .. '}:who', member)
            redis.call('HDEL', whom, member)
            if info then
              result[#result + 1] = subject
              result[#result + 1] = info
            end
          end
        end
        if redis.call('EXISTS', KEYS[1]) == 0 then
          result[1] = 1
          redis.call('DEL', KEYS[2])
          if redis.call('EXISTS', KEYS[3]) == 0 then redis.call('SREM', 'fanout:presence:nodes', ARGV[4]) end
        end
        return result
        """
}
