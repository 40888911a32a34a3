import FanoutEventLoop
@testable import FanoutRedis
import FanoutTestSupport
import Testing

/// The Redis client against a real redis-server on a free loopback port.
@Suite(.serialized, .threadPerTest, .timeLimit(.minutes(1)))
struct RedisShardTests {
    let fastTiming = RedisShard.Timing(heartbeat: .milliseconds(100), deadAfter: .milliseconds(600),
                                       firstRetry: .milliseconds(50), maxRetry: .milliseconds(200))

    func upShard(_ redis: RedisServerProcess, loop: EventLoop, maxInFlight: Int = 1000,
                 password: String? = nil) throws -> RedisShard {
        let shard = RedisShard(endpoint: RedisEndpoint(host: "127.0.0.1", port: redis.port, password: password),
                               loop: loop, timing: fastTiming, maxInFlight: maxInFlight)
        shard.start()
        try spin(loop, "shard up") { shard.isUp }
        return shard
    }

    func call(_ shard: RedisShard, _ loop: EventLoop, _ arguments: String...) throws -> RedisReply {
        var result: Result<RedisReply, RedisFailure>?
        if let refusal = shard.send(RedisCommand.encode(arguments), reply: { result = $0 }) { throw refusal }
        try spin(loop, "reply to \(arguments)") { result != nil }
        return try result!.get()
    }

    @Test func repliesOfEveryTypeDecode() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let shard = try upShard(redis, loop: loop)
        #expect(try call(shard, loop, "SET", "k", "v\u{0}w") == .status("OK"))
        #expect(try call(shard, loop, "GET", "k") == .string(Array("v\u{0}w".utf8)))
        #expect(try call(shard, loop, "GET", "missing") == .null)
        #expect(try call(shard, loop, "INCR", "n") == .integer(1))
        #expect(try call(shard, loop, "RPUSH", "l", "a", "b") == .integer(2))
        #expect(try call(shard, loop, "LRANGE", "l", "0", "-1") == .array([.string([97]), .string([98])]))
        guard case .error(let text) = try call(shard, loop, "INCR", "k") else {
            Issue.record("INCR of a string is an error")
            return
        }
        #expect(text.contains("not an integer"))
        shard.stop()
    }

    @Test func subscriptionsDeliverMessagesAndConfirmations() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let shard = try upShard(redis, loop: loop)
        var confirmed: [String] = []
        var messages: [(String, String?, String)] = []
        shard.onSubscribed = { _, name, isPattern in confirmed.append((isPattern ? "p:" : "") + String(decoding: name, as: UTF8.self)) }
        shard.onMessage = { _, message in
            messages.append((String(decoding: message.channel, as: UTF8.self),
                             message.pattern.map { String(decoding: $0, as: UTF8.self) },
                             String(decoding: message.payload, as: UTF8.self)))
        }
        shard.subscribe(Array("news".utf8))
        shard.psubscribe(Array("orders.*".utf8))
        try spin(loop, "both confirmed") { confirmed.count == 2 }
        #expect(Set(confirmed) == ["news", "p:orders.*"])
        #expect(try call(shard, loop, "PUBLISH", "news", "hello") == .integer(1))
        #expect(try call(shard, loop, "PUBLISH", "orders.eu", "one") == .integer(1))
        try spin(loop, "two messages") { messages.count == 2 }
        #expect(messages[0] == ("news", nil, "hello"))
        #expect(messages[1] == ("orders.eu", "orders.*", "one"))
        shard.unsubscribe(Array("news".utf8))
        // After UNSUBSCRIBE nobody on this shard listens to news: PUBLISH says so.
        try spin(loop, "unsubscribed") { (try? call(shard, loop, "PUBLISH", "news", "x")) == .integer(0) }
        shard.stop()
    }

    @Test func aKilledServerFailsCommandsClearlyAndTheShardComesBackAlone() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let shard = try upShard(redis, loop: loop)
        var statuses: [String] = []
        shard.onStatus = { statuses.append($0.status.name) }
        var confirmations = 0
        shard.onSubscribed = { _, _, _ in confirmations += 1 }
        var received: [String] = []
        shard.onMessage = { _, message in received.append(String(decoding: message.payload, as: UTF8.self)) }
        shard.subscribe(Array("events".utf8))
        try spin(loop, "subscribed") { confirmations == 1 }

        redis.kill()
        try spin(loop, "shard down") { shard.status.name == "down" }
        guard case .unavailable(let text)? = shard.send(RedisCommand.encode(["PING"]), reply: { _ in }) else {
            Issue.record("a command to a down shard is refused")
            return
        }
        #expect(text.contains("down"))

        try redis.start()
        try spin(loop, "shard up again") { shard.isUp && confirmations == 2 }
        #expect(statuses.contains("connecting"))
        #expect(shard.connections >= 2)
        // Subscribed again without being asked: a message published now arrives.
        #expect(try call(shard, loop, "PUBLISH", "events", "after") == .integer(1))
        try spin(loop, "message after the restart") { received == ["after"] }
        shard.stop()
    }

    @Test func aHungServerIsNoticedByTheHeartbeat() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let shard = try upShard(redis, loop: loop)
        var reason = ""
        shard.onStatus = { if case .down(let text) = $0.status { reason = text } }
        var outcome: Result<RedisReply, RedisFailure>?
        redis.pause()
        defer { redis.resume() }
        #expect(shard.send(RedisCommand.encode(["PING"]), reply: { outcome = $0 }) == nil)
        try spin(loop, "shard down while hung") { !reason.isEmpty }
        #expect(reason.contains("no reply") || reason.contains("no heartbeat"))
        // The command sent before may or may not have run: the failure says so.
        guard case .failure(.outcomeUnknown)? = outcome else {
            Issue.record("the PING in flight has an unknown outcome, got \(String(describing: outcome))")
            return
        }
        redis.resume()
        try spin(loop, "shard up after the pause") { shard.isUp }
        shard.stop()
    }

    @Test func commandsInFlightAreCapped() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let shard = try upShard(redis, loop: loop, maxInFlight: 10)
        var answered = 0
        var refused = 0
        for _ in 0..<15 {
            if shard.send(RedisCommand.encode(["INCR", "c"]), reply: { _ in answered += 1 }) != nil { refused += 1 }
        }
        #expect(refused >= 5)
        try spin(loop, "the accepted ones answered") { answered == 15 - refused }
        #expect(try call(shard, loop, "GET", "c").integer == Int64(15 - refused))
        shard.stop()
    }

    @Test func aPasswordFromTheURLIsUsed() throws {
        let redis = try RedisServerProcess(arguments: ["--requirepass", "s3cret"])
        let loop = try EventLoop()
        let endpoint = try RedisEndpoint(url: "redis://:s3cret@127.0.0.1:\(redis.port)")
        #expect(endpoint.description == "127.0.0.1:\(redis.port)")
        let shard = try upShard(redis, loop: loop, password: endpoint.password)
        #expect(try call(shard, loop, "SET", "a", "b") == .status("OK"))
        shard.stop()

        let wrong = RedisShard(endpoint: RedisEndpoint(host: "127.0.0.1", port: redis.port, password: "nope"),
                               loop: loop, timing: fastTiming)
        var reason = ""
        wrong.onStatus = { if case .down(let text) = $0.status { reason = text } }
        wrong.start()
        try spin(loop, "refused") { !reason.isEmpty }
        #expect(reason.contains("AUTH"))
        wrong.stop()
    }

    @Test func urlsParse() throws {
        #expect(try RedisEndpoint(url: "redis://10.0.0.2") == RedisEndpoint(host: "10.0.0.2", port: 6379))
        #expect(try RedisEndpoint(url: "redis://user:pw@h:7000/0") == RedisEndpoint(host: "h", port: 7000, password: "pw"))
        #expect(try RedisEndpoint(url: "redis://[::1]:7001") == RedisEndpoint(host: "::1", port: 7001))
        #expect(throws: RedisFailure.self) { try RedisEndpoint(url: "http://h") }
        #expect(throws: RedisFailure.self) { try RedisEndpoint(url: "redis://h:99999") }
        #expect(throws: RedisFailure.self) { try RedisEndpoint(url: "redis://h/3") }
    }
}
