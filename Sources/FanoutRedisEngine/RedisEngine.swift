import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutRedis

/// The engine shared by several nodes: each subject's numbering, order and history live on one of several
/// independent Redis primaries (its shard, by hash). Every node delivers to its subscribers only what comes
/// back from Redis, so all nodes see one order and one seq per subject.
///
/// The node subscribes in Redis only to what its clients need: exact subjects with SUBSCRIBE, counted per
/// subject and dropped with the last local subscriber; wildcard patterns folded into a few broad PSUBSCRIBE
/// globs on every shard (`SubjectKeys.glob`). A message that both a channel and a glob bring is delivered
/// once: while a glob that covers a channel is in effect, the channel's copy is ignored; and subjects that
/// are tracked drop any seq they have delivered already.
///
/// Replays (RESUME, LAST, and the gap filling after a shard comes back) follow the race-free order: the
/// subject's SUBSCRIBE is in effect first, live messages are buffered, then the stream is read, then the
/// buffer is delivered without the seqs the stream already had.
public final class RedisEngine {
    public struct Settings {
        public var endpoints: [RedisEndpoint]
        public var rules: [HistoryRule]
        public var idleExpiry: Duration
        public var maxInFlight: Int
        public var timing: RedisShard.Timing

        public init(endpoints: [RedisEndpoint], rules: [HistoryRule], idleExpiry: Duration, maxInFlight: Int = 1000,
                    timing: RedisShard.Timing = .init()) {
            self.endpoints = endpoints
            self.rules = rules
            self.idleExpiry = idleExpiry
            self.maxInFlight = maxInFlight
            self.timing = timing
        }
    }

    /// One live message from Redis.
    public struct Delivery {
        public let subject: String
        public let seq: UInt64
        public let payload: [UInt8]
    }

    /// A replay's answer, plus the live messages that came while it was read: to be sent right after it.
    public struct ReplayResult {
        public var answer: ReplayAnswer
        public var following: [Delivery]
    }

    /// An exact subject this node subscribes to in Redis.
    final class Tracked {
        var refs = 0
        /// The SUBSCRIBE is in effect: messages published from now on arrive.
        var confirmed = false
        var epoch: String?
        var lastSeq: UInt64 = 0
        /// Live messages held while the gap after a reconnection is filled.
        var catchingUp: [(epoch: String, delivery: Delivery)]?
        /// Replays under way, each buffering the live messages that arrive meanwhile.
        var replays: [ReplayBuffer] = []
        /// Run once the SUBSCRIBE is in effect (or with false when the shard went down first).
        var waiters: [(Bool) -> Void] = []
        /// Asking Redis where the subject's numbering stands (`learnPosition`).
        var learning = false
    }

    /// One replay under way: the live messages buffered meanwhile, and its two halves. The script's answer
    /// comes on the command connection, the marker it publishes on the subscription connection: only when
    /// the marker is here has every message numbered before the answer arrived (the two connections are
    /// read independently, so the answer can overtake them).
    final class ReplayBuffer {
        var messages: [(epoch: String, delivery: Delivery)] = []
        let marker: [UInt8]
        var markerSeen = false
        var answer: ReplayAnswer?
        var finish: ((Result<ReplayResult, RedisFailure>) -> Void)?

        init(marker: [UInt8]) { self.marker = marker }
    }

    /// Buffered live messages per replay at most; past it the replay fails as unavailable (bounded memory).
    static let replayBufferLimit = 100_000

    public let shards: [RedisShard]
    public let nodeID: String
    private var settings: Settings
    private var replaySHA: [UInt8] = []
    private var tracked: [String: Tracked] = [:]
    /// Glob → how many local wildcard patterns it stands for.
    private var globRefs: [[UInt8]: Int] = [:]
    /// Per shard, the globs whose PSUBSCRIBE is in effect, with the channel prefix each covers.
    private var activeGlobs: [[(glob: [UInt8], prefix: [UInt8])]]
    /// Per shard, what waits for a glob's PSUBSCRIBE to take effect.
    private var globWaiters: [[[UInt8]: [(Bool) -> Void]]]
    /// The globs wanted now (`wantedGlobs`).
    private var wanted: Set<[UInt8]> = []
    /// Per shard, channels let go because a glob covers them, whose UNSUBSCRIBE has not taken effect yet:
    /// until it has, the node counts twice in PUBLISH's reply.
    private var leaving: [Set<[UInt8]>]
    /// Per shard, what waits for a glob that took effect until the channels it replaces have left.
    private var afterLeaving: [[(prefix: [UInt8], waiter: (Bool) -> Void)]]
    /// The random token this node offers when a shard has no epoch yet.
    private var candidateEpoch: String
    private var shardEpochs: [String?]
    /// Replay markers made so far (their tokens are `sync.<node>.<n>`).
    private var markers: UInt64 = 0
    /// max_messages 0, max_age 0 and the idle expiry, encoded once for servers without history rules.
    private var noHistoryArguments: [UInt8] = []
    /// The PUBs on their way to the shards, in batches.
    private let publishing: PublishQueue

    /// Live messages for local subscribers.
    public var onDeliver: (Delivery) -> Void = { _ in }
    /// A shard's status changed (for logs).
    public var onShardStatus: (RedisShard) -> Void = { _ in }
    /// A tracked subject came back under a new epoch (its shard lost its data, or its keys expired).
    public var onNewEpoch: (String, String) -> Void = { _, _ in }

    public init(loop: EventLoop, settings: Settings) {
        self.settings = settings
        var random = SystemRandomNumberGenerator()
        nodeID = String(random.next() as UInt64, radix: 36)
        candidateEpoch = MemoryEngine.freshEpoch()
        shards = settings.endpoints.enumerated().map { index, endpoint in
            RedisShard(endpoint: endpoint, index: index, loop: loop, timing: settings.timing,
                       maxInFlight: settings.maxInFlight)
        }
        activeGlobs = Array(repeating: [], count: shards.count)
        globWaiters = Array(repeating: [:], count: shards.count)
        leaving = Array(repeating: [], count: shards.count)
        afterLeaving = Array(repeating: [], count: shards.count)
        shardEpochs = Array(repeating: nil, count: shards.count)
        publishing = PublishQueue(loop: loop, shards: shards)
        encodeNoHistoryArguments()
        publishing.candidateEpoch = { [unowned self] in self.candidateEpoch }
        for shard in shards {
            shard.prepare = { [unowned self] shard, done in self.prepare(shard, done: done) }
            shard.onStatus = { [unowned self] shard in self.statusChanged(shard) }
            shard.onMessage = { [unowned self] shard, message in self.received(message, on: shard) }
            shard.onSubscribed = { [unowned self] shard, name, isPattern in
                self.subscribed(name, isPattern: isPattern, on: shard)
            }
            shard.onUnsubscribed = { [unowned self] shard, channel in self.unsubscribed(channel, on: shard) }
        }
    }

    public func start() {
        for shard in shards { shard.start() }
    }

    public func stop() {
        // First, so that nothing the failed PUBs' owners do next can start a batch that nobody would send.
        publishing.stop()
        for shard in shards { shard.stop() }
    }

    public func applyHistory(rules: [HistoryRule]) {
        settings.rules = rules
        encodeNoHistoryArguments()
    }

    private func encodeNoHistoryArguments() {
        noHistoryArguments.removeAll()
        for argument in ["0", "0", String(expiryMilliseconds(nil))] { RedisCommand.appendBulk(argument, to: &noHistoryArguments) }
    }

    /// The epochs of the shards, as known: the greeting's `epoch=` (joined with `-`).
    public var epoch: String {
        let joined = shardEpochs.map { $0 ?? "pending" }.joined(separator: "-")
        return String(joined.prefix(64))
    }

    public func shardEpoch(_ index: Int) -> String? { shardEpochs[index] }

    func shard(of subject: String) -> RedisShard { shards[SubjectKeys.shard(of: subject, count: shards.count)] }

    private func rule(for subject: String) -> HistoryRule? {
        settings.rules.first { Subject.matches(pattern: $0.subjects, subject: subject) }
    }

    /// Milliseconds the subject's keys live after a publish: the idle expiry, or its history's age if longer.
    private func expiryMilliseconds(_ rule: HistoryRule?) -> Int64 {
        let idle = settings.idleExpiry
        let age = rule?.maxAge ?? .zero
        let longest = max(idle, age)
        return max(1000, longest.components.seconds * 1000 + longest.components.attoseconds / 1_000_000_000_000_000)
    }

    private static func milliseconds(_ duration: Duration?) -> Int64 {
        guard let duration else { return 0 }
        return duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    // MARK: Connection setup

    /// After each connection: load the scripts, read (or make) the shard's epoch.
    private func prepare(_ shard: RedisShard, done: @escaping (String?) -> Void) {
        var loaded = 0
        var failure: String?
        func finish() {
            loaded += 1
            guard loaded == 3 else { return }
            done(failure)
        }
        for (index, script) in [EngineScripts.publish, EngineScripts.replay].enumerated() {
            shard.sendDuringPreparation(RedisCommand.encode(["SCRIPT", "LOAD", script])) { [unowned self] result in
                switch result {
                case .success(let reply) where reply.bytes != nil:
                    if index == 0 { self.publishing.script = reply.bytes! } else { self.replaySHA = reply.bytes! }
                case .success(let reply):
                    failure = "SCRIPT LOAD: \(reply)"
                case .failure(let error):
                    failure = "SCRIPT LOAD: \(error)"
                }
                finish()
            }
        }
        let offered = candidateEpoch
        let command = RedisCommand.encode(["SET", SubjectKeys.shardEpochKey, offered, "NX", "GET"])
        shard.sendDuringPreparation(command) { [unowned self] result in
            switch result {
            case .success(.string(let existing)):
                self.noteShardEpoch(String(decoding: existing, as: UTF8.self), shard: shard)
            case .success(.null):
                self.noteShardEpoch(offered, shard: shard)
            case .success(let reply):
                failure = "epoch: \(reply)"
            case .failure(let error):
                failure = "epoch: \(error)"
            }
            finish()
        }
    }

    private func noteShardEpoch(_ epoch: String, shard: RedisShard) {
        if let known = shardEpochs[shard.index], known != epoch {
            onNewEpoch("shard \(shard.endpoint)", epoch)
        }
        shardEpochs[shard.index] = epoch
        // A token that became an epoch is not offered again: a shard that later loses its data must get a
        // name never used before.
        if epoch == candidateEpoch { candidateEpoch = MemoryEngine.freshEpoch() }
    }

    private func statusChanged(_ shard: RedisShard) {
        switch shard.status {
        case .up:
            // Everything this node had subscribed to on the shard is being subscribed again: each tracked
            // subject fills its gap from the stream once its SUBSCRIBE is in effect.
            for (subject, entry) in tracked where entry.refs > 0 && self.shard(of: subject) === shard {
                if entry.catchingUp == nil && entry.epoch != nil { entry.catchingUp = [] }
                entry.waiters.append { [unowned self] ok in self.fillGap(subject, ok: ok) }
            }
        case .down, .connecting:
            activeGlobs[shard.index].removeAll()
            leaving[shard.index].removeAll()
            let afterLeaving = self.afterLeaving[shard.index]
            self.afterLeaving[shard.index].removeAll()
            for (_, waiter) in afterLeaving { waiter(false) }
            let waiting = globWaiters[shard.index].values.flatMap { $0 }
            globWaiters[shard.index].removeAll()
            for waiter in waiting { waiter(false) }
            for (subject, entry) in tracked where self.shard(of: subject) === shard {
                entry.confirmed = false
                // A replay whose marker may never come now fails; its client can ask again.
                for buffer in entry.replays where buffer.answer != nil {
                    buffer.finish?(.failure(.unavailable("\(shard.endpoint) went away during the replay")))
                }
                let waiters = entry.waiters
                entry.waiters.removeAll()
                for waiter in waiters { waiter(false) }
            }
        }
        onShardStatus(shard)
    }

    // MARK: Publishing

    /// Sends a PUB to the subject's shard, in its next batch (`PublishQueue`); `receipts` is told under
    /// `ticket` the number of nodes that had subscribers, or why it failed (`outcomeUnknown` when the
    /// connection dropped after sending), never from inside this call. Returns the refusal instead, with
    /// nobody told, when the shard is down or has too many PUBs in flight (those gathered included), or the
    /// engine stopped.
    public func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                        receipts: PublishReceipts, ticket: UInt64) -> RedisFailure? {
        publishing.publish(subject: subject, payload: payload, rule: { historyArguments(of: subject) },
                           receipts: receipts, ticket: ticket)
    }

    /// max_messages, max_age and the idle expiry of the subject's history rule, as bulk strings.
    private func historyArguments(of subject: UnsafeRawBufferPointer) -> [UInt8] {
        if settings.rules.isEmpty { return noHistoryArguments }
        let rule = rule(for: String(decoding: subject, as: UTF8.self))
        var encoded: [UInt8] = []
        RedisCommand.appendBulk(String(rule?.maxMessages ?? 0), to: &encoded)
        RedisCommand.appendBulk(String(Self.milliseconds(rule?.maxAge)), to: &encoded)
        RedisCommand.appendBulk(String(expiryMilliseconds(rule)), to: &encoded)
        return encoded
    }

    // MARK: Subscriptions
    //
    // So that `+OK <receivers>` (PUBLISH's count) counts nodes, a node matches each message at most once in
    // Redis: the wildcard globs it wants never overlap (the `*` glob, when wanted, replaces the others), and
    // an exact subject that a glob in effect covers is not subscribed on its own. Changes keep the message
    // flowing: a new glob replaces channels only once its PSUBSCRIBE took effect, and a glob no longer wanted
    // goes only once the channels it covered are subscribed again. Which copy is delivered is decided at a
    // point of the subscription connection's one stream (`received`), so none is lost or doubled.

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
            let made = Tracked()
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
        shard.unsubscribe(SubjectKeys.channel(of: pattern))
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
    private func covered(_ channel: [UInt8], on index: Int) -> Bool {
        activeGlobs[index].contains { wanted.contains($0.glob) && channel.starts(with: $0.prefix) }
    }

    /// Whether messages of a tracked subject arrive now: its channel or a wanted glob is in effect.
    private func inEffect(_ subject: String, _ entry: Tracked) -> Bool {
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
            if entry.refs > 0 && shard.isUp { leaving[shard.index].insert(channel) }
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
            activeGlobs[shard.index].removeAll { $0.glob == glob }
            for waiter in globWaiters[shard.index].removeValue(forKey: glob) ?? [] { waiter(false) }
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
                for shard in shards where shard.isUp && !activeGlobs[shard.index].contains(where: { $0.glob == glob }) {
                    waiting += 1
                    globWaiters[shard.index][glob, default: []].append(countdown)
                }
            } else if let entry = tracked[pattern], !inEffect(pattern, entry), shard(of: pattern).isUp {
                waiting += 1
                entry.waiters.append(countdown)
            }
        }
        finished = true
        return waiting == 0
    }

    /// Subjects and globs subscribed in Redis.
    public var subscribedSubjects: Int { tracked.count }
    public var subscribedGlobs: Int { wanted.count }

    private func subscribed(_ name: [UInt8], isPattern: Bool, on shard: RedisShard) {
        if isPattern {
            guard shard.patterns.contains(name), !activeGlobs[shard.index].contains(where: { $0.glob == name }) else {
                return
            }
            activeGlobs[shard.index].append((name, SubjectKeys.prefix(ofGlob: name)))
            activeGlobs[shard.index].sort { $0.glob.lexicographicallyPrecedes($1.glob) }
            let prefix = SubjectKeys.prefix(ofGlob: name)
            let globWaiting = globWaiters[shard.index].removeValue(forKey: name) ?? []
            guard wanted.contains(name) else {
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
            // A SUB waiting on the glob replies once the channels it replaces have left too, so that its
            // node counts once from then on.
            if leaving[shard.index].contains(where: { $0.starts(with: prefix) }) {
                afterLeaving[shard.index] += globWaiting.map { (prefix, $0) }
            } else {
                for waiter in globWaiting { waiter(true) }
            }
            retireGlobs(on: shard)
            return
        }
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

    /// A subject this node has received nothing of yet learns where its numbering stands once its messages
    /// arrive, so that a gap after a reconnection can be filled from there (without a position, the gap
    /// filling could not tell the messages its subscribers missed from those before they subscribed).
    private func learnPosition(_ subject: String, _ entry: Tracked, on shard: RedisShard) {
        guard entry.epoch == nil, !entry.learning else { return }
        entry.learning = true
        // As a replay, marker and all: when it completes, every message up to its seq has come through the
        // subscription, so nothing at or below it can still arrive and be dropped as already seen.
        replay(ReplayRequest(subject: subject, kind: .position, budget: 0)) { [weak entry] result in
            guard let entry else { return }
            entry.learning = false
            // A message that came meanwhile has set the position already, from the stream itself.
            guard entry.epoch == nil, case .success(let position) = result else { return }
            entry.epoch = position.answer.epoch
            entry.lastSeq = position.answer.lastSeq
        }
    }

    private func unsubscribed(_ channel: [UInt8], on shard: RedisShard) {
        guard leaving[shard.index].remove(channel) != nil else { return }
        let waiting = afterLeaving[shard.index]
        guard !waiting.isEmpty else { return }
        afterLeaving[shard.index] = waiting.filter { item in leaving[shard.index].contains { $0.starts(with: item.prefix) } }
        for item in waiting where !leaving[shard.index].contains(where: { $0.starts(with: item.prefix) }) {
            item.waiter(true)
        }
    }

    // MARK: Live messages

    private func received(_ message: RedisShard.Message, on shard: RedisShard) {
        guard let subject = SubjectKeys.subject(ofChannel: message.channel) else { return }
        // One copy per message: the first glob in effect that covers the channel brings it, else the channel.
        let covering = activeGlobs[shard.index].first { message.channel.starts(with: $0.prefix) }
        if let pattern = message.pattern {
            guard let covering, covering.glob == pattern else { return }
        } else if covering != nil {
            return
        }
        let bytes = message.payload
        guard let (epoch, firstSeq, start) = Self.parseHead(bytes) else { return }
        let entry = tracked[subject]
        if firstSeq == 0 {
            // A replay's marker (seq 0 is never a message's): this node's, or another's to ignore.
            let marker = bytes[start...]
            guard let entry, let buffer = entry.replays.first(where: { $0.marker.elementsEqual(marker) }) else { return }
            buffer.markerSeen = true
            completeReplay(buffer)
            return
        }
        // A batch of the subject's messages: payloads joined by LF, with consecutive seqs.
        var seq = firstSeq
        var lineStart = start
        while true {
            let lineEnd = bytes[lineStart...].firstIndex(of: 10) ?? bytes.endIndex
            let delivery = Delivery(subject: subject, seq: seq, payload: Array(bytes[lineStart..<lineEnd]))
            if let entry {
                for replay in entry.replays where replay.messages.count < Self.replayBufferLimit {
                    replay.messages.append((epoch, delivery))
                }
                if entry.catchingUp != nil {
                    entry.catchingUp!.append((epoch, delivery))
                } else if accept(epoch: epoch, seq: seq, for: subject, entry) {
                    onDeliver(delivery)
                }
            } else {
                onDeliver(delivery)
            }
            guard lineEnd < bytes.endIndex else { return }
            lineStart = lineEnd + 1
            seq += 1
        }
    }

    /// Whether a tracked subject's message is new (not a seq delivered already), noting it if so.
    private func accept(epoch: String, seq: UInt64, for subject: String, _ entry: Tracked) -> Bool {
        if entry.epoch == epoch {
            guard seq > entry.lastSeq else { return false }
        } else if let known = entry.epoch {
            _ = known
            onNewEpoch(subject, epoch)
        }
        entry.epoch = epoch
        entry.lastSeq = seq
        return true
    }

    /// `<epoch> <seq> <payloads>`: the epoch, the (first) seq and where the payloads begin.
    static func parseHead(_ bytes: [UInt8]) -> (String, UInt64, Int)? {
        guard let first = bytes.firstIndex(of: UInt8(ascii: " ")),
              let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: " ")) else { return nil }
        var seq: UInt64 = 0
        for byte in bytes[(first + 1)..<second] {
            guard byte >= 48 && byte <= 57 else { return nil }
            seq = seq &* 10 &+ UInt64(byte - 48)
        }
        return (String(decoding: bytes[..<first], as: UTF8.self), seq, second + 1)
    }

    // MARK: Replays

    /// RESUME and LAST through the subject's stream, race-free: once the subject's SUBSCRIBE is in effect,
    /// live messages are buffered while the script reads the stream; they come back in `following` with the
    /// seqs the replay covers left out. Fails as unavailable while the shard is down.
    public func replay(_ request: ReplayRequest, done: @escaping (Result<ReplayResult, RedisFailure>) -> Void) {
        let subject = request.subject
        let shard = shard(of: subject)
        if let refusal = shard.refusal { return done(.failure(refusal)) }
        // Holds the subject for the length of the replay; the caller's own subscription takes over after.
        retain(pattern: subject)
        let entry = tracked[subject]!
        markers &+= 1
        let buffer = ReplayBuffer(marker: Array("sync.\(nodeID).\(markers)".utf8))
        entry.replays.append(buffer)
        buffer.finish = { [unowned self] result in
            guard buffer.finish != nil else { return }
            buffer.finish = nil
            entry.replays.removeAll { $0 === buffer }
            done(result)
            self.release(pattern: subject)
        }
        let run = { [unowned self] in
            self.readStream(request, on: shard, marker: buffer.marker) { result in
                switch result {
                case .success(let answer):
                    buffer.answer = answer
                    self.completeReplay(buffer)
                case .failure(let failure):
                    buffer.finish?(.failure(failure))
                }
            }
        }
        if inEffect(subject, entry) {
            run()
        } else {
            entry.waiters.append { ok in
                ok ? run() : buffer.finish?(.failure(.unavailable("\(shard.endpoint) went away during the replay")))
            }
        }
    }

    /// Finishes a replay once both its answer and its marker are here: the buffered messages after the
    /// answer's last seq follow the replay.
    private func completeReplay(_ buffer: ReplayBuffer) {
        guard buffer.markerSeen, let answer = buffer.answer else { return }
        guard buffer.messages.count < Self.replayBufferLimit else {
            buffer.finish?(.failure(.unavailable("too many messages arrived during the replay")))
            return
        }
        var seen = answer.lastSeq
        var following: [Delivery] = []
        for (epoch, delivery) in buffer.messages where epoch == answer.epoch && delivery.seq > seen {
            following.append(delivery)
            seen = delivery.seq
        }
        buffer.finish?(.success(ReplayResult(answer: answer, following: following)))
    }

    /// Runs the replay script and turns its answer into a `ReplayAnswer` within the request's budget.
    private func readStream(_ request: ReplayRequest, on shard: RedisShard, marker: [UInt8] = [],
                            done: @escaping (Result<ReplayAnswer, RedisFailure>) -> Void) {
        let subject = request.subject
        let rule = rule(for: subject)
        var mode = "position"
        var clientEpoch = ""
        var number: UInt64 = 0
        switch request.kind {
        case .position: break
        case .after(let epoch, let seq):
            mode = "after"
            clientEpoch = epoch
            number = seq
        case .newest(let count):
            mode = "newest"
            number = min(count, UInt64(rule?.maxMessages ?? 0))
        }
        var arguments = ["EVALSHA", String(decoding: replaySHA, as: UTF8.self), "4"] + SubjectKeys.keys(of: subject)
        arguments += [mode, clientEpoch, String(number), String(Self.milliseconds(rule?.maxAge)),
                      String(expiryMilliseconds(rule)), candidateEpoch, String(rule?.maxMessages ?? 0),
                      String(decoding: marker, as: UTF8.self), String(decoding: SubjectKeys.channel(of: subject), as: UTF8.self),
                      String(max(0, request.budget)), String(7 + subject.utf8.count)]
        let refusal = shard.send(RedisCommand.encode(arguments)) { result in
            switch result {
            case .success(.array(let parts)) where parts.count >= 2:
                done(.success(Self.answer(request, parts: parts)))
            default:
                done(.failure(Self.scriptFailure(result)))
            }
        }
        if let refusal { done(.failure(refusal)) }
    }

    /// Why a script's reply is not the answer expected: Redis's own error or a reply of another shape, as
    /// `unavailable`, or the connection's failure as it is.
    static func scriptFailure(_ result: Result<RedisReply, RedisFailure>) -> RedisFailure {
        switch result {
        case .success(.error(let text)): .unavailable("redis: \(text)")
        case .success(let other): .unavailable("unexpected reply \(other)")
        case .failure(let failure): failure
        }
    }

    /// The reply's figures and lines from the script's answer: the newest messages that fit the budget (the
    /// script keeps to it already; this is checked again, so a line never overruns it). After the client's
    /// position, the missed messages are those between it and the first one replayed: gone from the stream
    /// (count, age) or left out for the budget.
    static func answer(_ request: ReplayRequest, parts: [RedisReply]) -> ReplayAnswer {
        let epoch = parts[0].text ?? ""
        let last = UInt64(parts[1].integer ?? 0)
        var messages: [(UInt64, [UInt8])] = []
        var index = 2
        while index + 1 < parts.count {
            messages.append((UInt64(parts[index].integer ?? 0), parts[index + 1].bytes ?? []))
            index += 2
        }
        var answer = ReplayAnswer(epoch: epoch, lastSeq: last, replayed: 0, missed: 0)
        if case .position = request.kind { return answer }
        var budget = request.budget
        var fitting = 0
        for (seq, payload) in messages.reversed() {
            let size = 4 + request.subject.utf8.count + 1 + String(seq).utf8.count + 1 + payload.count + 1
            guard size <= budget else { break }
            budget -= size
            fitting += 1
        }
        let replayed = messages.suffix(fitting)
        switch request.kind {
        case .after(let clientEpoch, let after) where clientEpoch == epoch && after <= last:
            let firstReplayed = replayed.first?.0 ?? last + 1
            answer.missed = firstReplayed > after + 1 ? firstReplayed - (after + 1) : 0
        case .after:
            answer.missed = nil
        case .newest, .position:
            break
        }
        answer.replayed = fitting
        guard fitting > 0 else { return answer }
        answer.bytes = request.budget - budget
        answer.stream = FetchedReplay(subject: request.subject, messages: replayed.map { (seq: $0.0, payload: $0.1) })
        return answer
    }

    /// After a reconnection: the messages this node's subscribers of `subject` missed, from the stream,
    /// then the live ones held meanwhile.
    private func fillGap(_ subject: String, ok: Bool) {
        guard let entry = tracked[subject] else { return }
        guard ok, let epoch = entry.epoch else {
            flushCatchUp(entry, subject: subject)
            return
        }
        let shard = shard(of: subject)
        let request = ReplayRequest(subject: subject, kind: .after(epoch: epoch, seq: entry.lastSeq), budget: Int.max / 2)
        readStream(request, on: shard) { [unowned self] result in
            guard self.tracked[subject] === entry else { return }
            if case .success(let answer) = result {
                if answer.epoch != entry.epoch {
                    entry.epoch = answer.epoch
                    entry.lastSeq = 0
                    self.onNewEpoch(subject, answer.epoch)
                }
                let fetched = (answer.stream as? FetchedReplay)?.messages ?? []
                answer.stream?.finish()
                for (seq, payload) in fetched where seq > entry.lastSeq {
                    entry.lastSeq = seq
                    self.onDeliver(Delivery(subject: subject, seq: seq, payload: payload))
                }
            }
            self.flushCatchUp(entry, subject: subject)
        }
    }

    private func flushCatchUp(_ entry: Tracked, subject: String) {
        guard let held = entry.catchingUp else { return }
        entry.catchingUp = nil
        for (epoch, delivery) in held where accept(epoch: epoch, seq: delivery.seq, for: subject, entry) {
            onDeliver(delivery)
        }
    }
}
