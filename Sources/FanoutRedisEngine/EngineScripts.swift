/// The Lua scripts the Redis engine runs (EVALSHA), loaded on each shard after every connection.
///
/// A subject's keys have the subject as hash tag: `fanout:{<subject>}:seq`, a string `<epoch> <last seq>`
/// (one key, so that one GET reads both and one SET with PX writes both and refreshes the idle expiry), and
/// `fanout:{<subject>}:log`, its stream (history: entry id `<seq>-0`, fields `t` = milliseconds, `p` =
/// payload). Two keys are the shard's: its epoch and its count of numberings begun. A subject whose keys
/// expired (idle) or were lost begins a numbering under a new epoch, `<shard epoch>.<count>`, which no earlier
/// numbering used; a shard that lost its data (restarted without persistence) gets a new shard epoch by
/// `SET NX` of the calling node's random candidate.
enum EngineScripts {
    /// Reads the subject's epoch and last seq, beginning a numbering (and, if need be, the shard's epoch) when
    /// it has none, a value it cannot read, or one begun under another shard epoch: each counts as lost, so
    /// that a shard that came back without some of its writes (`shardEpoch`) never numbers on under an epoch
    /// whose seqs clients may already have seen. Lua: `position`, `stream`, `shardEpoch`, `numberings`,
    /// `candidate` and `currentShard` (the shard epoch, read once per call) are set by the script that
    /// includes it; it sets `epoch`, `last` (a number) and `fresh` (a numbering begins).
    private static let readPosition = """
        local epoch, last
        local fresh = false
        local known = redis.call('GET', position)
        local space = known and string.find(known, ' ', 1, true)
        if space and currentShard then
          epoch = string.sub(known, 1, space - 1)
          if string.sub(epoch, 1, #currentShard + 1) == currentShard .. '.' then
            last = tonumber(string.sub(known, space + 1))
          end
        end
        if not last then
          fresh = true
          if not currentShard then
            redis.call('SET', shardEpoch, candidate, 'NX')
            currentShard = redis.call('GET', shardEpoch)
          end
          epoch = currentShard .. '.' .. redis.call('INCR', numberings)
          last = 0
          redis.call('DEL', stream)
        end
        """

    /// A connection's check of the shard epoch, before the shard is used. KEYS: the shard epoch and the Redis
    /// run that last confirmed it. ARGV: this node's candidate epoch, Redis's `run_id`, and `1` when the
    /// shard loses no acknowledged write across a restart (AOF with `appendfsync always`).
    ///
    /// A Redis that restarted (a new run id) without that guarantee may have come back from an older
    /// snapshot, or without the last second of its AOF: the subjects' numberings it holds may be behind what
    /// nodes delivered. It gets a new shard epoch, so every subject begins a new numbering (`readPosition`)
    /// and subscribers hear `RESET ... missed=unknown` instead of seqs they have seen carrying new messages.
    /// Returns the shard epoch.
    static let checkEpoch = """
        local epoch = redis.call('GET', KEYS[1])
        local run = redis.call('GET', KEYS[2])
        if epoch and (run == ARGV[2] or ARGV[3] == '1') then
          if run ~= ARGV[2] then redis.call('SET', KEYS[2], ARGV[2]) end
          return epoch
        end
        redis.call('SET', KEYS[1], ARGV[1])
        redis.call('SET', KEYS[2], ARGV[2])
        return ARGV[1]
        """

    /// A batch of PUBs, grouped by subject. KEYS: the shard's epoch, its numberings, then per subject its
    /// position and its stream. ARGV: the candidate shard epoch, then per subject: its channel, how many
    /// messages (with a `b` after it when a payload holds an LF), its max_messages (0: no history), max_age ms
    /// (0: none), idle expiry ms, and the payloads.
    ///
    /// Per subject it numbers all its messages at once, keeps each (trimmed to about max_messages: Redis's
    /// approximate trimming, which costs a fraction of exact trimming; replays cut to max_messages exactly,
    /// and by age a few entries per call), and makes one PUBLISH of `<epoch> <first seq> <payload>`, the
    /// payloads joined by LF, which every node splits back into messages with consecutive seqs; a batch with a
    /// payload that holds an LF (BPUB) is framed instead, `<epoch> <first seq>b <lengths, by commas>` LF, and
    /// the payloads end to end, so any bytes pass through unchanged. Returns the receivers of each subject's PUBLISH, in order.
    ///
    /// Cost per call: one GET of the shard epoch, then three Redis commands per subject (GET, SET, PUBLISH; with history also a PEXPIRE and an
    /// XRANGE when max_age is set) plus one XADD per message kept; the batch is bounded (`PublishBatch`).
    static let publish = """
        local shardEpoch, numberings, candidate = KEYS[1], KEYS[2], ARGV[1]
        local currentShard = redis.call('GET', shardEpoch)
        local result = {}
        local now = nil
        local at = 2
        for group = 1, (#KEYS - 2) / 2 do
          local position, stream = KEYS[1 + 2 * group], KEYS[2 + 2 * group]
          local channel, countText = ARGV[at], ARGV[at + 1]
          local framed = string.sub(countText, -1) == 'b'
          local count = tonumber(framed and string.sub(countText, 1, -2) or countText)
          local maxlen, maxAge, expiry = ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
          at = at + 5
        """ + "\n" + readPosition + """

          local first = last + 1
          last = last + count
          redis.call('SET', position, epoch .. ' ' .. last, 'PX', expiry)
          if maxlen ~= '0' then
            if not now then
              local t = redis.call('TIME')
              now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            end
            for index = 0, count - 1 do
              redis.call('XADD', stream, 'MAXLEN', '~', maxlen, (first + index) .. '-0', 't', now, 'p', ARGV[at + index])
            end
            if maxAge ~= '0' then
              local oldest = redis.call('XRANGE', stream, '-', '+', 'COUNT', 4)
              local keepFrom = nil
              for _, entry in ipairs(oldest) do
                if tonumber(entry[2][2]) >= now - tonumber(maxAge) then break end
                keepFrom = (tonumber(string.match(entry[1], '^(%d+)')) + 1) .. '-0'
              end
              if keepFrom then redis.call('XTRIM', stream, 'MINID', keepFrom) end
            end
            redis.call('PEXPIRE', stream, expiry)
          end
          local message
          if framed then
            local lengths = {}
            for index = 0, count - 1 do lengths[#lengths + 1] = #ARGV[at + index] end
            message = epoch .. ' ' .. first .. 'b ' .. table.concat(lengths, ',') .. '\\n' .. table.concat(ARGV, '', at, at + count - 1)
          else
            message = epoch .. ' ' .. first .. ' ' .. table.concat(ARGV, '\\n', at, at + count - 1)
          end
          result[#result + 1] = redis.call('PUBLISH', channel, message)
          at = at + count
        end
        return result
        """

    /// RESUME and LAST. ARGV: mode (`position`, `after`, `newest`), the client's epoch, after-seq or count,
    /// max_age ms (0: none), idle expiry ms, candidate shard epoch, max_messages, a marker token (or empty),
    /// the subject's channel, the byte budget of the replay's `MSG` lines, and what such a line takes besides
    /// its seq and payload (`MSG <subject>  \n`). With a token it PUBLISHes `<epoch> 0 <token>` after
    /// reading: when that reaches the asking node, so has every message it read (see
    /// `RedisEngine.ReplayBuffer`). Returns {epoch, last seq, seq1, payload1, seq2, payload2, ...}, oldest
    /// first: the newest messages after the client's position (or the newest `count`), at most max_messages,
    /// none past max_age, and only as many as the budget holds.
    ///
    /// Cost: it reads the stream from its newest entry down, 128 entries a call, and stops at the first entry
    /// it will not send, so a replay costs Redis O(what it returns) (at most max_messages, and what the
    /// connection's output limit holds), however long the stream or small the client's request.
    static let replay = """
        local position, stream, shardEpoch, numberings = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
        local candidate = ARGV[6]
        local currentShard = redis.call('GET', shardEpoch)
        """ + "\n" + readPosition + """

        if fresh then redis.call('SET', position, epoch .. ' 0', 'PX', ARGV[5]) end
        local keep = tonumber(ARGV[7])
        local mode = ARGV[1]
        local number = tonumber(ARGV[3])
        local budget = tonumber(ARGV[10])
        local lineSize = tonumber(ARGV[11])
        local want, lower = 0, '-'
        if mode == 'after' and ARGV[2] == epoch and number <= last then
          want, lower = keep, (number + 1) .. '-0'
        elseif mode == 'after' then
          want = keep
        elseif mode == 'newest' and number > 0 then
          want = math.min(number, keep)
        end
        local cutoff = 0
        local maxAge = tonumber(ARGV[4])
        if maxAge > 0 then
          local t = redis.call('TIME')
          cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - maxAge
        end
        local taken = {}
        local upper = '+'
        local finished = want == 0
        while not finished do
          local count = math.min(128, want - #taken)
          local page = redis.call('XREVRANGE', stream, upper, lower, 'COUNT', count)
          for _, entry in ipairs(page) do
            local seq = string.match(entry[1], '^(%d+)')
            local payload = entry[2][4]
            local size = lineSize + #seq + #payload
            if tonumber(entry[2][2]) < cutoff or size > budget then
              finished = true
              break
            end
            budget = budget - size
            taken[#taken + 1] = {tonumber(seq), payload}
            if #taken >= want then
              finished = true
              break
            end
          end
          -- A short page: nothing older in range.
          if #page < count then break end
          upper = '(' .. page[#page][1]
        end
        if ARGV[8] ~= '' then redis.call('PUBLISH', ARGV[9], epoch .. ' 0 ' .. ARGV[8]) end
        local result = {epoch, last}
        for index = #taken, 1, -1 do
          result[#result + 1] = taken[index][1]
          result[#result + 1] = taken[index][2]
        end
        return result
        """
}
