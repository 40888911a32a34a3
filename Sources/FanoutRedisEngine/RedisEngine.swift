import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutRedis

/// The engine shared by several nodes: each subject's numbering, order and history live on one of several
/// independent Redis primaries (its shard, by hash). Every node delivers to its subscribers only what comes
/// back from Redis, so all nodes see one order and one seq per subject.
///
/// The node subscribes in Redis only to what its clients need (`RedisEngine+Subscriptions.swift`): exact
/// subjects with SUBSCRIBE, wildcard patterns folded into a few broad PSUBSCRIBE globs. Each message goes to
/// subscribers once, in order, with a `Reset` before it when the subject's numbering restarted or messages
/// were lost to this node (`RedisEngine+Delivery.swift`). After a reconnection, subjects with history fill
/// their gap from the stream first. Replays (RESUME, LAST) follow the race-free order of
/// `RedisEngine+Replay.swift`.
public final class RedisEngine {
    public struct Settings {
        public var endpoints: [RedisEndpoint]
        public var rules: [HistoryRule]
        public var idleExpiry: Duration
        public var maxInFlight: Int
        public var timing: RedisShard.Timing
        /// How long a node's presence members outlive its last lease renewal (`presence_lease`).
        public var presenceLease: Duration

        public init(endpoints: [RedisEndpoint], rules: [HistoryRule], idleExpiry: Duration, maxInFlight: Int = 1000,
                    timing: RedisShard.Timing = .init(), presenceLease: Duration = .seconds(3)) {
            self.endpoints = endpoints
            self.rules = rules
            self.idleExpiry = idleExpiry
            self.maxInFlight = maxInFlight
            self.timing = timing
            self.presenceLease = presenceLease
        }
    }

    /// What subscribers of a subject hear before a message: its numbering restarted, or messages were lost.
    public typealias Reset = NumberingReset

    /// One live message from Redis, with the reset its subscribers must hear first.
    public struct Delivery {
        public let subject: String
        public let seq: UInt64
        public let payload: [UInt8]
        public var reset: Reset?
        /// The subject's epoch: with `seq`, what names the message across nodes (a group's claim).
        public var epoch = ""
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
        let position: SubjectPosition
        /// Replays under way, each buffering the live messages that arrive meanwhile.
        var replays: [ReplayBuffer] = []
        /// Run once the SUBSCRIBE is in effect (or with false when the shard went down first).
        var waiters: [(Bool) -> Void] = []
        /// Asking Redis where the subject's numbering stands (`learnPosition`).
        var learning = false

        init(position: SubjectPosition) { self.position = position }
    }

    /// Buffered live messages per replay, and held messages per subject while its gap is filled, at most;
    /// past it a replay fails as unavailable and a fill is given up (bounded memory).
    static let replayBufferLimit = 100_000

    public let shards: [RedisShard]
    public let nodeID: String
    var settings: Settings
    var replaySHA: [UInt8] = []
    var tracked: [String: Tracked] = [:]
    /// Positions of subjects only wildcard subscriptions bring.
    var globPositions = PositionTable()
    /// Glob → how many local wildcard patterns it stands for.
    var globRefs: [[UInt8]: Int] = [:]
    /// The globs wanted now (`wantedGlobs`).
    var wanted: Set<[UInt8]> = []
    var shardStates: [ShardState]
    /// The random token this node offers when a shard needs a new epoch.
    var candidateEpoch: String
    /// Replay markers made so far (their tokens are `sync.<node>.<n>`).
    var markers: UInt64 = 0
    /// max_messages 0, max_age 0 and the idle expiry, encoded once for servers without history rules.
    private var noHistoryArguments: [UInt8] = []
    /// The PUBs on their way to the shards, in batches.
    let publishing: PublishQueue

    /// Where live messages for local subscribers go: the node's fan-out. Neither retained nor checked, as it is
    /// read per message: the server owns both the fan-out (a `let`) and this engine, so the fan-out outlives
    /// every delivery. This module's one reference of the kind, hence no type of its own for the rules.
    public unowned(unsafe) var deliveries: (any EngineDeliveries)?
    /// Questions across nodes: one put to this node's receivers, or what came back for one it put.
    public var onQuestion: (QuestionEvent) -> Void = { _ in }
    /// A group's message handed back by the node that claimed it (`RedisEngine+Groups.swift`).
    public var onHandBack: (HandedBack) -> Void = { _ in }
    /// A shard's status changed (for logs).
    public var onShardStatus: (RedisShard) -> Void = { _ in }
    /// A subject (or a shard) continues under a new epoch: its numbering restarted.
    public var onNewEpoch: (String, String) -> Void = { _, _ in }
    /// Presence across nodes (`RedisEngine+Presence.swift`): nil until `startPresence`.
    var presence: PresenceLedger?
    /// A lost node's member this node took from Redis: its leave (`reason=node-lost`) is to be announced.
    public var onPresenceLost: (String, PresenceMember) -> Void = { _, _ in }
    /// A member of this node written again after the node was declared lost: its join is to be announced again.
    public var onPresenceRejoined: (String, PresenceMember) -> Void = { _, _ in }
    /// Whether this node keeps presence for any subject now (`presence:`, reloadable): without it and without
    /// members, the heartbeat does no presence work.
    public var wantsPresence: () -> Bool = { true }

    public init(loop: EventLoop, settings: Settings) {
        self.settings = settings
        var random = SystemRandomNumberGenerator()
        nodeID = String(random.next() as UInt64, radix: 36)
        candidateEpoch = MemoryEngine.freshEpoch()
        shards = settings.endpoints.enumerated().map { index, endpoint in
            RedisShard(endpoint: endpoint, index: index, loop: loop, timing: settings.timing,
                       maxInFlight: settings.maxInFlight)
        }
        shardStates = Array(repeating: ShardState(), count: shards.count)
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
        subscribeToSharedChannels()
        for shard in shards { shard.start() }
    }

    /// PUBs gathered or unanswered, or any command a shard that is up still owes an answer to (presence's
    /// writes among them).
    public var hasWorkInFlight: Bool {
        !publishing.isIdle || shards.contains { $0.isUp && $0.inFlight > 0 }
    }

    public func stop() {
        // First, so that nothing the failed PUBs' owners do next can start a batch that nobody would send.
        publishing.stop()
        for shard in shards { shard.stop() }
    }

    public func applyHistory(rules: [HistoryRule], maxBytes: Int) {
        settings.rules = rules
        encodeNoHistoryArguments()
    }

    private func encodeNoHistoryArguments() {
        noHistoryArguments.removeAll()
        for argument in ["0", "0", String(expiryMilliseconds(nil))] { RedisCommand.appendBulk(argument, to: &noHistoryArguments) }
    }

    /// The epochs of the shards, as known: the greeting's `epoch=` (joined with `-`).
    public var epoch: String {
        let joined = shardStates.map { $0.epoch ?? "pending" }.joined(separator: "-")
        return String(joined.prefix(64))
    }

    public func shardEpoch(_ index: Int) -> String? { shardStates[index].epoch }

    func shard(of subject: String) -> RedisShard { shards[SubjectKeys.shard(of: subject, count: shards.count)] }

    func rule(for subject: String) -> HistoryRule? {
        settings.rules.first { Subject.matches(pattern: $0.subjects, subject: subject) }
    }

    /// Whether the subject keeps messages in its stream, from which a gap can be filled.
    func keepsHistory(_ subject: String) -> Bool { (rule(for: subject)?.maxMessages ?? 0) > 0 }

    /// Milliseconds the subject's keys live after a publish: the idle expiry, or its history's age if longer.
    func expiryMilliseconds(_ rule: HistoryRule?) -> Int64 {
        let idle = settings.idleExpiry
        let age = rule?.maxAge ?? .zero
        let longest = max(idle, age)
        return max(1000, longest.components.seconds * 1000 + longest.components.attoseconds / 1_000_000_000_000_000)
    }

    static func milliseconds(_ duration: Duration?) -> Int64 {
        guard let duration else { return 0 }
        return duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    // MARK: Shard status

    private func statusChanged(_ shard: RedisShard) {
        switch shard.status {
        case .up:
            holdForGapFilling(on: shard)
            presenceShardUp(shard)
        case .down, .connecting:
            presenceShardDown(shard)
            for waiter in shardStates[shard.index].disconnected() { waiter(false) }
            let filling = shardStates[shard.index].fillingThroughGlobs
            shardStates[shard.index].fillingThroughGlobs.removeAll()
            for (subject, position) in filling { flushCatchUp(position, subject: subject) }
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
    func send(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
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

    /// Subjects and globs subscribed in Redis.
    public var subscribedSubjects: Int { tracked.count }
    public var subscribedGlobs: Int { wanted.count }
}
