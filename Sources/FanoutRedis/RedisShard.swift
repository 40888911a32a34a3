import CHiredis
import FanoutEventLoop

/// One Redis primary as a node uses it: a connection for commands and one for subscriptions, kept alive by
/// the shard itself.
///
/// hiredis 0.14 has no timeouts, so the shard watches both connections: every `heartbeat` it PUBLISHes to a
/// channel only its own subscription connection listens to. The PUBLISH's reply shows the command connection
/// answers (as a PING would); the message coming back shows the subscription connection still receives (a
/// PING there gets no callback). Nothing for `deadAfter` on either, or a connect that takes that long, and
/// the shard drops both and reconnects with backoff. On reconnection it authenticates, runs `prepare` (the
/// engine's SCRIPT LOAD and epoch check) and subscribes again to everything it held.
public final class RedisShard {
    public enum Status: Equatable, Sendable {
        case connecting
        case up
        case down(String)

        public var name: String {
            switch self {
            case .connecting: "connecting"
            case .up: "up"
            case .down: "down"
            }
        }
    }

    public struct Timing: Sendable {
        public var heartbeat: Duration
        public var deadAfter: Duration
        public var firstRetry: Duration
        public var maxRetry: Duration

        public init(heartbeat: Duration = .milliseconds(500), deadAfter: Duration = .seconds(2),
                    firstRetry: Duration = .milliseconds(100), maxRetry: Duration = .seconds(2)) {
            self.heartbeat = heartbeat
            self.deadAfter = deadAfter
            self.firstRetry = firstRetry
            self.maxRetry = maxRetry
        }
    }

    /// A pushed message: the channel, the pattern that matched it (for PSUBSCRIBE), and the payload.
    public struct Message {
        public let channel: [UInt8]
        public let pattern: [UInt8]?
        public let payload: [UInt8]
    }

    public let endpoint: RedisEndpoint
    public let index: Int
    private let loop: EventLoop
    private let timing: Timing
    /// Commands in flight above which `send` refuses: Redis is slower than the clients, or gone silent.
    public let maxInFlight: Int
    public private(set) var status: Status = .connecting
    private var commands: RedisConnection?
    private var subscriber: RedisConnection?
    private var connectedCount = 0
    private var ready = false
    private var retryDelay: Duration
    private var retryTimer: LoopTimer?
    private var beatTimer: LoopTimer?
    private var connectStarted = ContinuousClock.now
    private var lastReply = ContinuousClock.now
    public private(set) var lastHeartbeat: ContinuousClock.Instant?
    private let heartbeatChannel: [UInt8]
    /// Channels and patterns subscribed to (or to be, once connected).
    public private(set) var channels = Set<[UInt8]>()
    public private(set) var patterns = Set<[UInt8]>()
    /// Connections made since start: 1 after the first.
    public private(set) var connections = 0

    /// Runs after each (re)connection, before the shard is up: the engine's own setup. Call `done` with nil
    /// when it succeeded, or with the reason it failed (the shard then reconnects later).
    public var prepare: (RedisShard, _ done: @escaping (String?) -> Void) -> Void = { _, done in done(nil) }
    public var onStatus: (RedisShard) -> Void = { _ in }
    public var onMessage: (RedisShard, Message) -> Void = { _, _ in }
    /// A SUBSCRIBE or PSUBSCRIBE took effect: messages on it arrive from now on.
    public var onSubscribed: (RedisShard, _ name: [UInt8], _ isPattern: Bool) -> Void = { _, _, _ in }
    /// An UNSUBSCRIBE took effect: nothing more arrives on that channel.
    public var onUnsubscribed: (RedisShard, _ channel: [UInt8]) -> Void = { _, _ in }

    public init(endpoint: RedisEndpoint, index: Int = 0, loop: EventLoop, timing: Timing = Timing(),
                maxInFlight: Int = 1000) {
        self.endpoint = endpoint
        self.index = index
        self.loop = loop
        self.timing = timing
        self.maxInFlight = maxInFlight
        retryDelay = timing.firstRetry
        var token = SystemRandomNumberGenerator()
        heartbeatChannel = Array("fanout:heartbeat:\(token.next() as UInt64)".utf8)
    }

    deinit {
        commands?.close(reason: "shard released")
        subscriber?.close(reason: "shard released")
    }

    /// Connects; the shard then keeps itself connected until `stop()`.
    public func start() {
        let timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.tick() }
        timer.schedule(after: timing.heartbeat)
        beatTimer = timer
        connect()
    }

    public func stop() {
        beatTimer = nil
        retryTimer = nil
        drop(reason: "stopped", reconnect: false)
    }

    /// Commands sent and not answered yet, a batch of PUBs counting as its messages.
    public var inFlight: Int { commands?.inFlight ?? 0 }

    public var isUp: Bool { status == .up }

    /// Why a command cannot be sent now, or nil when it can.
    public var refusal: RedisFailure? { refusal(waitingToBeSent: 0) }

    /// Why a command cannot be sent now when `waitingToBeSent` more (a batch being gathered) count as in
    /// flight already, or nil when it can.
    public func refusal(waitingToBeSent: Int) -> RedisFailure? {
        switch status {
        case .up:
            let inFlight = self.inFlight + waitingToBeSent
            return inFlight >= maxInFlight
                ? .unavailable("\(endpoint) has \(inFlight) commands in flight") : nil
        case .connecting:
            return .unavailable("\(endpoint) is connecting")
        case .down(let reason):
            return .unavailable("\(endpoint) is down: \(reason)")
        }
    }

    /// Sends a command (wire format) on the command connection. When the shard is not up or too busy, `reply`
    /// is not called and the failure is returned.
    public func send(_ command: [UInt8], reply: @escaping (Result<RedisReply, RedisFailure>) -> Void) -> RedisFailure? {
        if let refusal { return refusal }
        return sendNow(command, reply: reply)
    }

    /// Sends a batch of `weight` PUBs (accepted one by one through `refusal(waitingToBeSent:)`, so not
    /// refused again for being busy); fails only when the shard is not up.
    public func sendBatch(_ command: [UInt8], weight: Int,
                          reply: @escaping (Result<RedisReply, RedisFailure>) -> Void) -> RedisFailure? {
        guard isUp else { return refusal }
        return sendNow(command, weight: weight, reply: reply)
    }

    private func sendNow(_ command: [UInt8], weight: Int = 1,
                         reply: @escaping (Result<RedisReply, RedisFailure>) -> Void) -> RedisFailure? {
        guard let commands, commands.send(command, weight: weight, reply: reply) else {
            return .unavailable("\(endpoint) is not connected")
        }
        return nil
    }

    // MARK: Subscriptions

    public func subscribe(_ channel: [UInt8]) {
        guard channels.insert(channel).inserted, ready else { return }
        subscriber?.sendSubscription(RedisCommand.encode(["SUBSCRIBE"], channel))
    }

    public func unsubscribe(_ channel: [UInt8]) {
        guard channels.remove(channel) != nil, ready else { return }
        subscriber?.sendSubscription(RedisCommand.encode(["UNSUBSCRIBE"], channel))
    }

    public func psubscribe(_ pattern: [UInt8]) {
        guard patterns.insert(pattern).inserted, ready else { return }
        subscriber?.sendSubscription(RedisCommand.encode(["PSUBSCRIBE"], pattern))
    }

    public func punsubscribe(_ pattern: [UInt8]) {
        guard patterns.remove(pattern) != nil, ready else { return }
        subscriber?.sendSubscription(RedisCommand.encode(["PUNSUBSCRIBE"], pattern))
    }

    // MARK: Connection life

    private func connect() {
        retryTimer = nil
        setStatus(.connecting)
        connectStarted = .now
        connectedCount = 0
        ready = false
        do {
            let commands = try RedisConnection(loop: loop, host: endpoint.host, port: endpoint.port)
            let subscriber = try RedisConnection(loop: loop, host: endpoint.host, port: endpoint.port)
            for connection in [commands, subscriber] {
                connection.onEvent = { [unowned self] event in self.connectionEvent(event) }
            }
            subscriber.onPush = { [unowned self] reply in self.pushed(reply) }
            subscriber.onMessage = { [unowned self] reply in self.pushedMessage(reply) }
            self.commands = commands
            self.subscriber = subscriber
        } catch {
            drop(reason: error.description, reconnect: true)
        }
    }

    private func connectionEvent(_ event: RedisConnection.Event) {
        switch event {
        case .connected:
            connectedCount += 1
            if connectedCount == 2 { authenticate() }
        case .ended(let reason):
            drop(reason: reason, reconnect: true)
        }
    }

    /// AUTH on both connections when there is a password, then the engine's preparation, then the
    /// subscriptions.
    private func authenticate() {
        guard let password = endpoint.password else { return prepareEngine() }
        var answered = 0
        for connection in [commands, subscriber] {
            connection?.send(RedisCommand.encode(["AUTH", password]), reply: { [unowned self] result in
                guard case .success(let reply) = result else { return }
                if case .error(let text) = reply { return self.drop(reason: "AUTH: \(text)", reconnect: true) }
                answered += 1
                if answered == 2 { self.prepareEngine() }
            })
        }
    }

    private func prepareEngine() {
        let generation = connections + 1
        connections = generation
        prepare(self) { [weak self] failure in
            guard let self, self.connections == generation, self.commands != nil else { return }
            if let failure { return self.drop(reason: failure, reconnect: true) }
            self.becomeReady()
        }
    }

    /// Commands sent while the engine prepares itself (before the shard is up).
    public func sendDuringPreparation(_ command: [UInt8], reply: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        if let failure = sendNow(command, reply: reply) { reply(.failure(failure)) }
    }

    private func becomeReady() {
        ready = true
        retryDelay = timing.firstRetry
        lastReply = .now
        lastHeartbeat = .now
        subscriber?.sendSubscription(RedisCommand.encode(["SUBSCRIBE"], heartbeatChannel))
        // Resubscribe in slices of a thousand names per command: a node may hold many subjects.
        for (verb, names) in [("SUBSCRIBE", Array(channels)), ("PSUBSCRIBE", Array(patterns))] {
            var start = 0
            while start < names.count {
                let slice = Array(names[start..<min(start + 1000, names.count)])
                subscriber?.sendSubscription(RedisCommand.encode([verb], slice))
                start += 1000
            }
        }
        setStatus(.up)
    }

    /// Drops both connections (failing what is in flight as of unknown outcome) and reconnects later.
    private func drop(reason: String, reconnect: Bool) {
        ready = false
        let commands = self.commands
        let subscriber = self.subscriber
        self.commands = nil
        self.subscriber = nil
        commands?.close(reason: reason)
        subscriber?.close(reason: reason)
        setStatus(.down(reason))
        guard reconnect, beatTimer != nil, retryTimer == nil else { return }
        let timer = LoopTimer(loop: loop) { [unowned self] in self.connect() }
        timer.schedule(after: retryDelay)
        retryTimer = timer
        retryDelay = min(retryDelay * 2, timing.maxRetry)
    }

    private func setStatus(_ status: Status) {
        guard self.status != status else { return }
        self.status = status
        onStatus(self)
    }

    // MARK: Heartbeat

    private func tick() {
        let now = ContinuousClock.now
        if commands != nil && !ready {
            if now - connectStarted > timing.deadAfter {
                drop(reason: "no connection within \(timing.deadAfter)", reconnect: true)
            }
            return
        }
        guard ready, let commands else { return }
        let lastReply = max(self.lastReply, commands.lastReply)
        if now - lastReply > timing.deadAfter && commands.inFlight > 0 {
            return drop(reason: "no reply for \(now - lastReply)", reconnect: true)
        }
        if let lastHeartbeat, now - lastHeartbeat > timing.deadAfter {
            return drop(reason: "no heartbeat for \(now - lastHeartbeat)", reconnect: true)
        }
        if commands.inFlight == 0 { self.lastReply = now }
        _ = sendNow(RedisCommand.encode(["PUBLISH"], heartbeatChannel, extra: ["1"])) { _ in }
    }

    private func pushed(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count >= 3, let kind = parts[0].bytes else { return }
        switch kind {
        case Self.messageKind:
            guard let channel = parts[1].bytes, let payload = parts[2].bytes else { return }
            if channel == heartbeatChannel {
                lastHeartbeat = .now
                return
            }
            onMessage(self, Message(channel: channel, pattern: nil, payload: payload))
        case Self.patternMessageKind:
            guard parts.count >= 4, let pattern = parts[1].bytes, let channel = parts[2].bytes,
                  let payload = parts[3].bytes else { return }
            onMessage(self, Message(channel: channel, pattern: pattern, payload: payload))
        case Self.subscribeKind, Self.patternSubscribeKind:
            guard let name = parts[1].bytes, name != heartbeatChannel else { return }
            onSubscribed(self, name, kind == Self.patternSubscribeKind)
        case Self.unsubscribeKind:
            guard let name = parts[1].bytes else { return }
            onUnsubscribed(self, name)
        default:
            return
        }
    }

    /// A `message` or `pmessage` straight from hiredis's reply: three or four strings, copied once each.
    private func pushedMessage(_ reply: UnsafeMutablePointer<redisReply>) -> Bool {
        let parts = reply.pointee
        guard parts.type == REDIS_REPLY_ARRAY, parts.elements == 3 || parts.elements == 4,
              let kind = parts.element[0]?.pointee, kind.type == REDIS_REPLY_STRING else { return false }
        func bytes(_ index: Int) -> [UInt8]? {
            guard let element = parts.element[index]?.pointee, element.type == REDIS_REPLY_STRING else { return nil }
            guard let text = element.str, element.len > 0 else { return [] }
            return Array(UnsafeRawBufferPointer(start: text, count: element.len))
        }
        let name = UnsafeRawBufferPointer(start: kind.str, count: kind.len)
        if parts.elements == 3 && name.elementsEqual(Self.messageKind) {
            guard let channel = bytes(1), let payload = bytes(2) else { return false }
            if channel == heartbeatChannel {
                lastHeartbeat = .now
            } else {
                onMessage(self, Message(channel: channel, pattern: nil, payload: payload))
            }
            return true
        }
        if parts.elements == 4 && name.elementsEqual(Self.patternMessageKind) {
            guard let pattern = bytes(1), let channel = bytes(2), let payload = bytes(3) else { return false }
            onMessage(self, Message(channel: channel, pattern: pattern, payload: payload))
            return true
        }
        return false
    }

    private static let messageKind = Array("message".utf8)
    private static let patternMessageKind = Array("pmessage".utf8)
    private static let subscribeKind = Array("subscribe".utf8)
    private static let patternSubscribeKind = Array("psubscribe".utf8)
    private static let unsubscribeKind = Array("unsubscribe".utf8)
}

extension RedisCommand {
    /// A command whose last arguments are bytes: `verb... name extra...`.
    static func encode(_ verbs: [String], _ name: [UInt8], extra: [String] = []) -> [UInt8] {
        encode(verbs, [name], extra: extra)
    }

    static func encode(_ verbs: [String], _ names: [[UInt8]], extra: [String] = []) -> [UInt8] {
        var output: [UInt8] = []
        append(verbs.map { Array($0.utf8) } + names + extra.map { Array($0.utf8) }, to: &output)
        terminate(&output)
        return output
    }
}
