import FanoutEngine
import FanoutRedis

/// Live messages from Redis to local subscribers: one copy each, in order, with a `Reset` first whenever the
/// subject's numbering restarted or messages were lost to this node; and, after a reconnection, the gap of a
/// subject with history filled from its stream before its live messages go on.
extension RedisEngine {
    func received(_ message: RedisShard.Message, on shard: RedisShard) {
        if message.pattern == nil, shard.index == 0, let question = questionEvent(channel: message.channel, payload: message.payload) {
            if let question { onQuestion(question) }
            return
        }
        if message.pattern == nil, shard.index == 0, let handedBack = Self.handedBack(channel: message.channel, payload: message.payload) {
            if let handedBack { onHandBack(handedBack) }
            return
        }
        guard let subject = SubjectKeys.subject(ofChannel: message.channel) else { return }
        // One copy per message: the first glob in effect that covers the channel brings it, else the channel.
        let covering = shardStates[shard.index].activeGlobs.first { message.channel.starts(with: $0.prefix) }
        if let pattern = message.pattern {
            guard let covering, covering.glob == pattern else { return }
        } else if covering != nil {
            return
        }
        let bytes = message.payload
        guard let (epoch, firstSeq, start, lengths) = Self.parseHead(bytes) else { return }
        let entry = tracked[subject]
        if firstSeq == 0 {
            // A replay's marker (seq 0 is never a message's): this node's, or another's to ignore.
            let marker = bytes[start...]
            guard let entry, let buffer = entry.replays.first(where: { $0.marker.elementsEqual(marker) }) else { return }
            buffer.markerSeen = true
            completeReplay(buffer)
            return
        }
        let position: SubjectPosition
        if let entry {
            position = entry.position
        } else {
            let (found, dropped) = globPositions.position(of: subject)
            position = found
            for (subject, held) in dropped { flushCatchUp(held, subject: subject) }
        }
        // A batch of the subject's messages, with consecutive seqs: payloads joined by LF, or, when one holds an
        // LF (BPUB), laid end to end after their lengths.
        var seq = firstSeq
        var lineStart = start
        var framed = lengths?.makeIterator()
        while true {
            let lineEnd: Int
            if framed != nil {
                guard let length = framed!.next(), lineStart + length <= bytes.endIndex else { return }
                lineEnd = lineStart + length
            } else {
                lineEnd = bytes[lineStart...].firstIndex(of: 10) ?? bytes.endIndex
            }
            let payload = Array(bytes[lineStart..<lineEnd])
            if let entry {
                for replay in entry.replays where replay.messages.count < Self.replayBufferLimit {
                    replay.messages.append((epoch, Delivery(subject: subject, seq: seq, payload: payload)))
                }
            }
            if position.catchingUp != nil {
                position.catchingUp!.append((epoch, seq, payload))
                // Too much to hold: what is held goes out now, and the fill, when it comes, is dropped.
                if position.catchingUp!.count >= Self.replayBufferLimit { flushCatchUp(position, subject: subject) }
            } else {
                deliver(subject, epoch: epoch, seq: seq, payload: payload, at: position)
            }
            guard lineEnd < bytes.endIndex else { return }
            lineStart = framed == nil ? lineEnd + 1 : lineEnd
            seq += 1
        }
    }

    /// Hands a message to the subscribers unless it was delivered already, with the reset it calls for.
    func deliver(_ subject: String, epoch: String, seq: UInt64, payload: [UInt8], at position: SubjectPosition) {
        guard case .deliver(let reset) = position.admit(epoch: epoch, seq: seq) else { return }
        if let reset, reset.missed == nil {
            // A script adopted this node's candidate as the shard epoch (the key was lost while connected):
            // it is never offered again, so that a later loss gets a name never used before.
            if epoch.hasPrefix(candidateEpoch + ".") { candidateEpoch = MemoryEngine.freshEpoch() }
            onNewEpoch(subject, epoch)
        }
        guard let deliveries else { return }
        var name = subject
        name.withUTF8 { subjectBytes in
            payload.withUnsafeBytes { payloadBytes in
                // Any bytes pass through Redis unchanged: a payload a line cannot carry is pushed as BMSG.
                _ = deliveries.deliver(NumberedMessage(subject: UnsafeRawBufferPointer(subjectBytes), seq: seq,
                                                       payload: payloadBytes, anyBytes: true), reset: reset, epoch: epoch)
            }
        }
    }

    /// `<epoch> <seq> <payloads>`: the epoch, the (first) seq and where the payloads begin.
    /// Splits `<epoch> <first seq> <payloads>`: where the payloads start, and, for the framed form
    /// `<epoch> <first seq>b <length>,<length>,...\n<payloads end to end>` (a batch with a payload that holds an
    /// LF), their lengths.
    static func parseHead(_ bytes: [UInt8]) -> (String, UInt64, Int, [Int]?)? {
        guard let first = bytes.firstIndex(of: UInt8(ascii: " ")),
              let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: " ")) else { return nil }
        var seq: UInt64 = 0
        var digitsEnd = second
        if second > first + 1 && bytes[second - 1] == UInt8(ascii: "b") { digitsEnd = second - 1 }
        for byte in bytes[(first + 1)..<digitsEnd] {
            guard byte >= 48 && byte <= 57 else { return nil }
            seq = seq &* 10 &+ UInt64(byte - 48)
        }
        let epoch = String(decoding: bytes[..<first], as: UTF8.self)
        guard digitsEnd < second else { return (epoch, seq, second + 1, nil) }
        guard let newline = bytes[(second + 1)...].firstIndex(of: 10) else { return nil }
        var lengths: [Int] = []
        for field in bytes[(second + 1)..<newline].split(separator: UInt8(ascii: ",")) {
            guard let length = Int(String(decoding: field, as: UTF8.self)), length >= 0 else { return nil }
            lengths.append(length)
        }
        return (epoch, seq, newline + 1, lengths)
    }

    // MARK: After a reconnection

    /// The shard is up again and subscribes to everything once more. Subjects with history and a known
    /// position hold their live messages until their gap is filled from the stream, once their subscription
    /// is in effect; the others need no fill: a gap shows in the seqs of their next message.
    ///
    /// Cost, once per reconnection: a scan of the tracked subjects and of the wildcard positions (at most
    /// 2 × `PositionTable.capacity`), a history-rule match each, and one stream read per subject that fills.
    func holdForGapFilling(on shard: RedisShard) {
        for (subject, entry) in tracked where entry.refs > 0 && self.shard(of: subject) === shard {
            let position = entry.position
            guard position.epoch != nil, position.catchingUp == nil, keepsHistory(subject) else { continue }
            position.catchingUp = []
            entry.waiters.append { [unowned self] ok in
                ok ? self.fillGap(subject, position) : self.flushCatchUp(position, subject: subject)
            }
        }
        var filling: [(subject: String, position: SubjectPosition)] = []
        globPositions.forEach { subject, position in
            guard position.epoch != nil, position.catchingUp == nil, self.shard(of: subject) === shard,
                  keepsHistory(subject) else { return }
            position.catchingUp = []
            filling.append((subject, position))
        }
        shardStates[shard.index].fillingThroughGlobs += filling
    }

    /// A glob took effect again: the wildcard-only subjects it covers fill their gaps.
    func fillGapsThroughGlob(_ prefix: [UInt8], on shard: RedisShard) {
        let index = shard.index
        guard !shardStates[index].fillingThroughGlobs.isEmpty else { return }
        var later: [(subject: String, position: SubjectPosition)] = []
        for item in shardStates[index].fillingThroughGlobs where item.position.catchingUp != nil {
            if SubjectKeys.channel(of: item.subject).starts(with: prefix) {
                fillGap(item.subject, item.position)
            } else {
                later.append(item)
            }
        }
        shardStates[index].fillingThroughGlobs = later
    }

    /// The messages this node's subscribers of `subject` missed, from the stream, then the live ones held
    /// meanwhile. What the stream no longer has is reported by the reset before the next message.
    func fillGap(_ subject: String, _ position: SubjectPosition) {
        guard let epoch = position.epoch else { return flushCatchUp(position, subject: subject) }
        let request = ReplayRequest(subject: subject, kind: .after(epoch: epoch, seq: position.lastSeq),
                                    budget: Int.max / 2)
        readStream(request, on: shard(of: subject)) { [unowned self] result in
            // Given up meanwhile (too much held, or the subject forgotten): its live messages went out already.
            guard position.catchingUp != nil else { return }
            if case .success(let answer) = result {
                let fetched = (answer.stream as? FetchedReplay)?.messages ?? []
                answer.stream?.finish()
                for (seq, payload) in fetched {
                    self.deliver(subject, epoch: answer.epoch, seq: seq, payload: payload, at: position)
                }
            }
            self.flushCatchUp(position, subject: subject)
        }
    }

    func flushCatchUp(_ position: SubjectPosition, subject: String) {
        guard let held = position.catchingUp else { return }
        position.catchingUp = nil
        for (epoch, seq, payload) in held {
            deliver(subject, epoch: epoch, seq: seq, payload: payload, at: position)
        }
    }

    /// A glob went: the wildcard-only subjects it brought may miss messages from now on without a gap that
    /// this node could see, so their positions are forgotten (what they hold goes out first).
    func forgetGlobPositions() {
        guard globPositions.count > 0 else { return }
        for index in shardStates.indices { shardStates[index].fillingThroughGlobs.removeAll() }
        for (subject, position) in globPositions.removeAll() { flushCatchUp(position, subject: subject) }
    }
}
