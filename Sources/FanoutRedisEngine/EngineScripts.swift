/// The Lua scripts the Redis engine runs (EVALSHA), loaded on each shard after every connection.
///
/// Both take the same keys, the subject as hash tag: KEYS[1] the subject's hash (`e` its epoch, `s` its last
/// seq), KEYS[2] its stream (history: entry id `<seq>-0`, fields `t` = milliseconds, `p` = payload), KEYS[3]
/// the shard's epoch, KEYS[4] the shard's count of numberings begun. A subject whose keys expired (idle) or
/// were lost begins a numbering under a new epoch, `<shard epoch>.<count>`, which no earlier numbering used;
/// a shard that lost its data (restarted without persistence) gets a new shard epoch by `SET NX` of the
/// calling node's random candidate. A publish to a known subject runs four commands without history
/// (HGET, HINCRBY, PEXPIRE, PUBLISH) and two more with it (XADD, PEXPIRE).
enum EngineScripts {
    /// Makes sure the subject's epoch (and, for a new numbering, the shard's) exists.
    private static let ensureEpoch = """
        local epoch = redis.call('HGET', KEYS[1], 'e')
        if not epoch then
          local shard = redis.call('GET', KEYS[3])
          if not shard then
            redis.call('SET', KEYS[3], ARGV[6], 'NX')
            shard = redis.call('GET', KEYS[3])
          end
          epoch = shard .. '.' .. redis.call('INCR', KEYS[4])
          redis.call('DEL', KEYS[2])
          redis.call('HSET', KEYS[1], 'e', epoch, 's', 0)
          redis.call('PEXPIRE', KEYS[1], ARGV[5])
        end
        """

    /// PUB. ARGV: channel, payload, max_messages (0: no history), max_age ms (0: none), idle expiry ms,
    /// candidate shard epoch. Numbers, keeps (trimmed to about max_messages: Redis's approximate trimming,
    /// which costs a fraction of exact trimming; replays cut to max_messages exactly, and by age a few entries
    /// per call), refreshes the expiry, publishes `<epoch> <seq> <payload>`; returns {seq, receivers}.
    static let publish = ensureEpoch + """

        local seq = redis.call('HINCRBY', KEYS[1], 's', 1)
        local maxlen = tonumber(ARGV[3])
        if maxlen > 0 then
          local t = redis.call('TIME')
          local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
          redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, seq .. '-0', 't', now, 'p', ARGV[2])
          local maxAge = tonumber(ARGV[4])
          if maxAge > 0 then
            local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 4)
            local keepFrom = nil
            for _, entry in ipairs(oldest) do
              if tonumber(entry[2][2]) >= now - maxAge then break end
              keepFrom = (tonumber(string.match(entry[1], '^(%d+)')) + 1) .. '-0'
            end
            if keepFrom then redis.call('XTRIM', KEYS[2], 'MINID', keepFrom) end
          end
          redis.call('PEXPIRE', KEYS[2], ARGV[5])
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        local receivers = redis.call('PUBLISH', ARGV[1], epoch .. ' ' .. seq .. ' ' .. ARGV[2])
        return {seq, receivers}
        """

    /// RESUME and LAST. ARGV: mode (`position`, `after`, `newest`), the client's epoch, after-seq or count,
    /// max_age ms (0: none), idle expiry ms, candidate shard epoch, max_messages, a marker token (or empty)
    /// and the subject's channel. With a token it PUBLISHes `<epoch> 0 <token>` after reading: when that
    /// reaches the asking node, so has every message it read (see `RedisEngine.ReplayBuffer`). Returns {epoch, last seq,
    /// first retained seq (0: none), seq1, payload1, seq2, payload2, ...}, oldest first: the newest
    /// max_messages at most, without those past max_age. Bounded by max_messages.
    static let replay = ensureEpoch + """

        local last = tonumber(redis.call('HGET', KEYS[1], 's') or '0')
        local keep = tonumber(ARGV[7])
        local newest = {}
        local mode = ARGV[1]
        local number = tonumber(ARGV[3])
        if mode == 'after' and ARGV[2] == epoch and number <= last then
          newest = redis.call('XREVRANGE', KEYS[2], '+', (number + 1) .. '-0', 'COUNT', keep)
        elseif mode == 'after' then
          newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', keep)
        elseif mode == 'newest' and number > 0 then
          newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', math.min(number, keep))
        end
        local oldestKept = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', keep)
        local cutoff = 0
        local maxAge = tonumber(ARGV[4])
        if maxAge > 0 then
          local t = redis.call('TIME')
          cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - maxAge
        end
        local first = 0
        for index = #oldestKept, 1, -1 do
          if tonumber(oldestKept[index][2][2]) >= cutoff then
            first = tonumber(string.match(oldestKept[index][1], '^(%d+)'))
            break
          end
        end
        if ARGV[8] ~= '' then redis.call('PUBLISH', ARGV[9], epoch .. ' 0 ' .. ARGV[8]) end
        local result = {epoch, last, first}
        for index = #newest, 1, -1 do
          local entry = newest[index]
          if tonumber(entry[2][2]) >= cutoff then
            result[#result + 1] = tonumber(string.match(entry[1], '^(%d+)'))
            result[#result + 1] = entry[2][4]
          end
        end
        return result
        """
}
