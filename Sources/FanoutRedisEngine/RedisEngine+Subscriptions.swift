import FanoutEngine
import FanoutProtocol
import FanoutRedis

// So that `+OK <receivers>` (PUBLISH's count) counts nodes, a node matches each message at most once in
// Redis: the wildcard globs it wants never overlap (the `*` glob, when wanted, replaces the others), and an
// exact subject that a glob in effect covers is not subscribed on its own. Changes keep the message flowing:
// a new glob replaces channels only once its PSUBSCRIBE took effect, and a glob no longer wanted goes only
// once the channels it covered are subscribed again. Which copy is delivered is decided at a point of the
// subscription connection's one stream (`received`), so none is lost or doubled.
extension RedisEngine {
    /// A local subscription to `pattern` began: exact subjects are subscribed in Redis on their shard (on
    /// the first one), wildcards through their glob on every shard.
    public func retain(pattern: String) {
        if Subject.isWildcard(pattern) {
            let glob = SubjectKeys.glob(of: pattern).glob
            globRefs[glob, default: 0] += 1
            if globRefs[glob] == 1 { globsChanged() }
            return
        }
        let entry = tracked[pattern] ?? {
            // A subject that globs brought so far keeps its position: its numbering is followed on.
            let made = Tracked(position: globPositions.take(pattern) ?? SubjectPosition())
            tracked[pattern] = made
            return made
        }()
        entry.refs += 1
        if entry.refs == 1 { reconcile(pattern, entry) }
    }

    /// A local subscription to `pattern` ended.
    public func release(pattern: String) {
        if Subject.isWildcard(pattern) {
            let glob = SubjectKeys.glob(of: pattern).glob
            guard let count = globRefs[glob] else { return }
            if count > 1 {
                globRefs[glob] = count - 1
                return
            }
            globRefs[glob] = nil
            globsChanged()
            return
        }
        guard let entry = tracked[pattern] else { return }
        entry.refs -= 1
        guard entry.refs <= 0 else { return }
        tracked[pattern] = nil
        let shard = shard(of: pattern)
        let channel = SubjectKeys.channel(of: pattern)
        // A glob in effect brings the subject on: its position stays with the wildcard subjects.
        if covered(channel, on: shard.index) && entry.position.catchingUp == nil {
            globPositions.put(pattern, entry.position)
        }
        shard.unsubscribe(channel)
        for waiter in entry.waiters { waiter(false) }
        retireGlobs(on: shard)
    }

    /// The globs wanted now: `*` alone when any pattern needs it, else one per first token.
    private func wantedGlobs() -> Set<[UInt8]> {
        let everything = SubjectKeys.channelPrefix + [UInt8(ascii: "*")]
        return globRefs[everything] != nil ? [everything] : Set(globRefs.keys)
    }

    private func globsChanged() {
        wanted = wantedGlobs()
        for shard in shards {
            for glob in wanted { shard.psubscribe(glob) }
            retireGlobs(on: shard)
        }
    }

    /// Whether a wanted glob in effect on the shard covers the channel.
    func covered(_ channel: [UInt8], on index: Int) -> Bool {
        shardStates[index].activeGlobs.contains { wanted.contains($0.glob) && channel.starts(with: $0.prefix) }
    }

    /// Whether messages of a tracked subject arrive now: its channel or a wanted glob is in effect.
    func inEffect(_ subject: String, _ entry: Tracked) -> Bool {
        entry.confirmed || covered(SubjectKeys.channel(of: subject), on: shard(of: subject).index)
    }

    /// Subscribes the subject's channel, or lets it go when a wanted glob in effect covers it.
    private func reconcile(_ subject: String, _ entry: Tracked) {
        let shard = shard(of: subject)
        let channel = SubjectKeys.channel(of: subject)
        if entry.refs > 0 && !covered(channel, on: shard.index) {
            shard.subscribe(channel)
        } else if shard.channels.contains(channel) {
            shard.unsubscribe(channel)
            if entry.refs > 0 && shard.isUp { shardStates[shard.index].leaving.insert(channel) }
            entry.confirmed = false
        }
    }

    /// PUNSUBSCRIBEs the globs no longer wanted whose subjects are all in effect through their channels (or
    /// another glob) again.
    ///
    /// Cost: nothing while every glob the shard holds is wanted; else a scan of the tracked subjects (at most
    /// the node's exact subscriptions) per unwanted glob. It runs when globs change and when a channel that an
    /// unwanted glob covers is confirmed, so a glob's retirement costs one scan per such channel.
    private func retireGlobs(on shard: RedisShard) {
        let unwanted = shard.patterns.subtracting(wanted)
        guard !unwanted.isEmpty else { return }
        for glob in unwanted {
            let prefix = SubjectKeys.prefix(ofGlob: glob)
            var ready = true
            for (subject, entry) in tracked where entry.refs > 0 && self.shard(of: subject) === shard {
                let channel = SubjectKeys.channel(of: subject)
                guard channel.starts(with: prefix), !covered(channel, on: shard.index) else { continue }
                reconcile(subject, entry)
                if !entry.confirmed && shard.isUp { ready = false }
            }
            guard ready else { continue }
            shard.punsubscribe(glob)
            shardStates[shard.index].activeGlobs.removeAll { $0.glob == glob }
            for waiter in shardStates[shard.index].globWaiters.removeValue(forKey: glob) ?? [] { waiter(false) }
            forgetGlobPositions()
        }
    }

    /// Runs `done` once every one of `patterns` is subscribed in Redis on every shard that is up (the caller
    /// has retained them), so that a SUB's reply means what it says: messages published from then on, on
    /// any node, arrive. Returns true instead, with `done` not called, when they all are already. A shard
    /// that goes down meanwhile counts as done: its subscriptions come back with it.
    public func whenInEffect(_ patterns: [String], done: @escaping () -> Void) -> Bool {
        var waiting = 0
        var finished = false
        let countdown: (Bool) -> Void = { _ in
            waiting -= 1
            if waiting == 0 && finished { done() }
        }
        let everything = SubjectKeys.channelPrefix + [UInt8(ascii: "*")]
        for pattern in patterns {
            if Subject.isWildcard(pattern) {
                var glob = SubjectKeys.glob(of: pattern).glob
                if wanted.contains(everything) { glob = everything }
                for shard in shards where shard.isUp
                    && !shardStates[shard.index].activeGlobs.contains(where: { $0.glob == glob }) {
                    waiting += 1
                    shardStates[shard.index].globWaiters[glob, default: []].append(countdown)
                }
            } else if let entry = tracked[pattern], !inEffect(pattern, entry), shard(of: pattern).isUp {
                waiting += 1
                entry.waiters.append(countdown)
            }
        }
        finished = true
        return waiting == 0
    }

    func subscribed(_ name: [UInt8], isPattern: Bool, on shard: RedisShard) {
        if isPattern { return globSubscribed(name, on: shard) }
        guard let subject = SubjectKeys.subject(ofChannel: name), let entry = tracked[subject],
              shard.channels.contains(name) else { return }
        entry.confirmed = true
        learnPosition(subject, entry, on: shard)
        let waiters = entry.waiters
        entry.waiters.removeAll()
        for waiter in waiters { waiter(true) }
        // Only a channel that a glob being retired covers can let that glob go.
        if shard.patterns.contains(where: { !wanted.contains($0) && name.starts(with: SubjectKeys.prefix(ofGlob: $0)) }) {
            retireGlobs(on: shard)
        }
    }

    private func globSubscribed(_ glob: [UInt8], on shard: RedisShard) {
        let index = shard.index
        guard shard.patterns.contains(glob), !shardStates[index].activeGlobs.contains(where: { $0.glob == glob }) else {
            return
        }
        let prefix = SubjectKeys.prefix(ofGlob: glob)
        shardStates[index].activeGlobs.append((glob, prefix))
        shardStates[index].activeGlobs.sort { $0.glob.lexicographicallyPrecedes($1.glob) }
        let globWaiting = shardStates[index].globWaiters.removeValue(forKey: glob) ?? []
        guard wanted.contains(glob) else {
            for waiter in globWaiting { waiter(true) }
            return
        }
        // The subjects it covers need their channels no more; whoever waited on them may go on.
        for (subject, entry) in tracked where self.shard(of: subject) === shard {
            guard SubjectKeys.channel(of: subject).starts(with: prefix) else { continue }
            reconcile(subject, entry)
            learnPosition(subject, entry, on: shard)
            let waiters = entry.waiters
            entry.waiters.removeAll()
            for waiter in waiters { waiter(true) }
        }
        fillGapsThroughGlob(prefix, on: shard)
        // A SUB waiting on the glob replies once the channels it replaces have left too, so that its node
        // counts once from then on.
        if shardStates[index].leaving.contains(where: { $0.starts(with: prefix) }) {
            shardStates[index].afterLeaving += globWaiting.map { (prefix, $0) }
        } else {
            for waiter in globWaiting { waiter(true) }
        }
        retireGlobs(on: shard)
    }

    /// A subject this node has received nothing of yet learns where its numbering stands once its messages
    /// arrive, so that a gap after a reconnection can be filled from there (without a position, the gap
    /// filling could not tell the messages its subscribers missed from those before they subscribed).
    private func learnPosition(_ subject: String, _ entry: Tracked, on shard: RedisShard) {
        guard entry.position.epoch == nil, !entry.learning else { return }
        entry.learning = true
        // As a replay, marker and all: when it completes, every message up to its seq has come through the
        // subscription, so nothing at or below it can still arrive and be dropped as already seen.
        readReplay(ReplayRequest(subject: subject, kind: .position, budget: 0)) { [weak entry] result in
            guard let entry else { return }
            entry.learning = false
            // A message that came meanwhile has set the position already, from the stream itself.
            guard entry.position.epoch == nil, case .success(let position) = result else { return }
            entry.position.epoch = position.answer.epoch
            entry.position.lastSeq = position.answer.lastSeq
        }
    }

    func unsubscribed(_ channel: [UInt8], on shard: RedisShard) {
        let index = shard.index
        guard shardStates[index].leaving.remove(channel) != nil else { return }
        let waiting = shardStates[index].afterLeaving
        guard !waiting.isEmpty else { return }
        let leaving = shardStates[index].leaving
        shardStates[index].afterLeaving = waiting.filter { item in leaving.contains { $0.starts(with: item.prefix) } }
        for item in waiting where !leaving.contains(where: { $0.starts(with: item.prefix) }) {
            item.waiter(true)
        }
    }
}
