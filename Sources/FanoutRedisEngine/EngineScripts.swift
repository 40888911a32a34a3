/// The Lua scripts the Redis engine runs (EVALSHA), loaded on each shard after every connection.
///
/// Both take the same keys, all with the subject as hash tag: KEYS[1] the subject's seq counter, KEYS[2] its
/// stream (history: entry id `<seq>-0`, fields `t` = milliseconds, `p` = payload), KEYS[3] its epoch, KEYS[4]
/// the shard's epoch, KEYS[5] the shard's count of numberings begun. A subject whose keys expired (idle) or
/// were lost begins a numbering under a new epoch, `<shard epoch>.<count>`, which no earlier numbering used;
/// a shard that lost its data (restarted without persistence) gets a new shard epoch by `SET NX` of the
/// calling node's random candidate.
enum EngineScripts {
    /// Makes sure the shard's and the subject's epochs exist; returns the subject's epoch.
    private static let ensureEpoch = """
        local shard = redis.call('GET', KEYS[4])
        if not shard then
          redis.call('SET', KEYS[4], ARGV[6], 'NX')
          shard = redis.call('GET', KEYS[4])
        end
        local epoch = redis.call('GET', KEYS[3])
        if not epoch then
          epoch = shard .. '.' .. redis.call('INCR', KEYS[5])
          redis.call('SET', KEYS[3], epoch, 'PX', ARGV[5])
          redis.call('SET', KEYS[1], 0, 'PX', ARGV[5])
          redis.call('DEL', KEYS[2])
        end
        """

    /// PUB. ARGV: channel, payload, max_messages (0: no history), max_age ms (0: none), idle expiry ms,
    /// candidate shard epoch. Numbers, keeps (trimmed by count, and by age a few entries per call), refreshes
    /// the expiry, publishes `<epoch> <seq> <payload>`; returns {seq, receivers}.
    static let publish = ensureEpoch + """

        local seq = redis.call('INCR', KEYS[1])
        local maxlen = tonumber(ARGV[3])
        if maxlen > 0 then
          local t = redis.call('TIME')
          local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
          redis.call('XADD', KEYS[2], 'MAXLEN', maxlen, seq .. '-0', 't', now, 'p', ARGV[2])
          local maxAge = tonumber(ARGV[4])
          if maxAge > 0 then
            local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 16)
            local keepFrom = nil
            for _, entry in ipairs(oldest) do
              if tonumber(entry[2][2]) >= now - maxAge then keepFrom = entry[1]; break end
              keepFrom = (tonumber(string.match(entry[1], '^(%d+)')) + 1) .. '-0'
            end
            if keepFrom then redis.call('XTRIM', KEYS[2], 'MINID', keepFrom) end
          end
          redis.call('PEXPIRE', KEYS[2], ARGV[5])
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        redis.call('PEXPIRE', KEYS[3], ARGV[5])
        local receivers = redis.call('PUBLISH', ARGV[1], epoch .. ' ' .. seq .. ' ' .. ARGV[2])
        return {seq, receivers}
        """

    /// RESUME and LAST. ARGV: mode (`position`, `after`, `newest`), the client's epoch, after-seq or count,
    /// max_age ms (0: none), idle expiry ms, candidate shard epoch. Returns {epoch, last seq, first retained
    /// seq (0: none), seq1, payload1, seq2, payload2, ...}, oldest first, with messages past max_age left out.
    /// Bounded by the subject's max_messages.
    static let replay = ensureEpoch + """

        local last = tonumber(redis.call('GET', KEYS[1]) or '0')
        local entries = {}
        local mode = ARGV[1]
        local number = tonumber(ARGV[3])
        if mode == 'after' and ARGV[2] == epoch and number <= last then
          entries = redis.call('XRANGE', KEYS[2], (number + 1) .. '-0', '+')
        elseif mode == 'after' then
          entries = redis.call('XRANGE', KEYS[2], '-', '+')
        elseif mode == 'newest' and number > 0 then
          local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', number)
          for index = #newest, 1, -1 do entries[#entries + 1] = newest[index] end
        end
        local cutoff = 0
        local maxAge = tonumber(ARGV[4])
        if maxAge > 0 then
          local t = redis.call('TIME')
          cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - maxAge
        end
        local result = {epoch, last, 0}
        for _, entry in ipairs(entries) do
          if tonumber(entry[2][2]) >= cutoff then
            local seq = tonumber(string.match(entry[1], '^(%d+)'))
            if result[3] == 0 then result[3] = seq end
            result[#result + 1] = seq
            result[#result + 1] = entry[2][4]
          end
        end
        return result
        """
}
