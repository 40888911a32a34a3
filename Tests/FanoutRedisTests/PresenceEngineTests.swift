import FanoutEventLoop
import FanoutProtocol
import FanoutRedis
@testable import FanoutRedisEngine
import FanoutTestSupport
import Testing

/// Presence across nodes at the engine level: several Redis engines (nodes) on one loop against a real
/// redis-server, each writing its members there, a lease each, and the lost-node announcement.
@Suite(.serialized, .threadPerTest, .timeLimit(.minutes(1)))
struct PresenceEngineTests {
    static let timing = RedisShard.Timing(heartbeat: .milliseconds(100), deadAfter: .milliseconds(600),
                                          firstRetry: .milliseconds(50), maxRetry: .milliseconds(200))

    func node(_ redis: RedisServerProcess, _ loop: EventLoop) throws -> RedisEngine {
        let engine = RedisEngine(loop: loop, settings: .init(
            endpoints: [RedisEndpoint(host: "127.0.0.1", port: redis.port)], rules: [], idleExpiry: .seconds(60),
            timing: Self.timing, presenceLease: .milliseconds(600)))
        engine.start()
        try spin(loop, "engine up") { engine.shards.allSatisfy(\.isUp) }
        engine.startPresence(loop: loop)
        return engine
    }

    func who(_ engine: RedisEngine, _ subject: String, limit: Int = 100, _ loop: EventLoop) throws
        -> (count: Int, members: [PresenceMember]) {
        var answer: Result<(count: Int, members: [PresenceMember]), RedisFailure>?
        engine.presenceWho(subject, limit: limit) { answer = $0 }
        try spin(loop, "WHO answered") { answer != nil }
        return try answer!.get()
    }

    /// Waits until WHO on `engine` counts `count`.
    func awaitCount(_ engine: RedisEngine, _ subject: String, _ count: Int, _ loop: EventLoop) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try who(engine, subject, loop).count != count {
            guard ContinuousClock.now < deadline else {
                throw RedisServerFailure("WHO \(subject) never counted \(count)")
            }
        }
    }

    @Test func membersOfOneNodeAreCountedAndListedInJoinOrderOnAnother() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let one = try node(redis, loop)
        let two = try node(redis, loop)
        // Join order across nodes is to the millisecond of their clocks: the joins are a few apart.
        func aFewMilliseconds() throws {
            let later = ContinuousClock.now + .milliseconds(3)
            try spin(loop, "3 ms") { ContinuousClock.now >= later }
        }
        one.presenceJoined("chat.room", connection: 7, user: "alice", group: nil)
        try aFewMilliseconds()
        two.presenceJoined("chat.room", connection: 3, user: nil, group: nil)
        try aFewMilliseconds()
        one.presenceJoined("chat.room", connection: 8, user: "bob", group: "g")
        try awaitCount(two, "chat.room", 3, loop)
        let listed = try who(two, "chat.room", loop)
        #expect(listed.members.map(\.client) == ["\(one.nodeID)/7", "\(two.nodeID)/3", "\(one.nodeID)/8"])
        #expect(listed.members.map(\.user) == ["alice", nil, "bob"])
        #expect(listed.members.map(\.group) == [nil, nil, "g"])
        #expect(listed.members.allSatisfy { $0.sinceSeconds == 0 })
        // A limit lists the oldest; 0 lists none but counts.
        #expect(try who(one, "chat.room", limit: 1, loop).members.map(\.client) == ["\(one.nodeID)/7"])
        let none = try who(one, "chat.room", limit: 0, loop)
        #expect(none.count == 3 && none.members.isEmpty)
        one.presenceLeft("chat.room", connection: 7)
        try awaitCount(two, "chat.room", 2, loop)
        #expect(try who(one, "other.room", loop).count == 0)
        one.stop()
        two.stop()
    }

    @Test func aLostNodesMembersAreAnnouncedOnceByOneSurvivorAndRemoved() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let lost = try node(redis, loop)
        var announced: [(node: String, subject: String, member: PresenceMember)] = []
        let survivors = try (0..<2).map { _ in try node(redis, loop) }
        for survivor in survivors {
            survivor.onPresenceLost = { [unowned survivor] subject, member in
                announced.append((survivor.nodeID, subject, member))
            }
        }
        lost.presenceJoined("chat.a", connection: 1, user: "alice", group: nil)
        lost.presenceJoined("chat.b", connection: 1, user: "alice", group: nil)
        lost.presenceJoined("chat.a", connection: 2, user: nil, group: "g")
        survivors[0].presenceJoined("chat.a", connection: 5, user: nil, group: nil)
        try awaitCount(survivors[1], "chat.a", 3, loop)
        // The node stops renewing without a word, as a node killed with SIGKILL does.
        let started = ContinuousClock.now
        lost.stopPresence()
        lost.stop()
        try spin(loop, "three leaves announced") { announced.count == 3 }
        let took = ContinuousClock.now - started
        // Past the lease (0.6 s) and within it plus two heartbeats and a margin.
        #expect(took >= .milliseconds(500) && took < .seconds(3), "announced after \(took)")
        // A few heartbeats more: nothing is announced twice, by either survivor.
        let quiet = ContinuousClock.now + .milliseconds(800)
        try spin(loop, "quiet") { ContinuousClock.now >= quiet }
        #expect(announced.count == 3)
        #expect(Set(announced.map(\.node)).count == 1)
        #expect(announced.map(\.subject) == ["chat.a", "chat.b", "chat.a"])
        #expect(announced.map(\.member.client) == ["\(lost.nodeID)/1", "\(lost.nodeID)/1", "\(lost.nodeID)/2"])
        #expect(announced.map(\.member.group) == [nil, nil, "g"])
        #expect(announced[0].member.user == "alice")
        let left = try who(survivors[1], "chat.a", loop)
        #expect(left.count == 1 && left.members.map(\.client) == ["\(survivors[0].nodeID)/5"])
        #expect(try who(survivors[1], "chat.b", loop).count == 0)
        for survivor in survivors { survivor.stop() }
    }

    @Test func aShardRestartedWithItsDataNeitherDuplicatesNorKeepsWhatLeftMeanwhile() throws {
        let redis = try RedisServerProcess(arguments: ["--appendonly", "yes", "--appendfsync", "always"])
        let loop = try EventLoop()
        let one = try node(redis, loop)
        let two = try node(redis, loop)
        for id in 1...3 { one.presenceJoined("chat.room", connection: UInt64(id), user: nil, group: nil) }
        try awaitCount(two, "chat.room", 3, loop)
        redis.kill()
        try spin(loop, "shard down") { !one.shards[0].isUp && !two.shards[0].isUp }
        // While it is away: one leaves, one joins; neither reaches Redis now.
        one.presenceLeft("chat.room", connection: 2)
        one.presenceJoined("chat.room", connection: 4, user: nil, group: nil)
        try redis.start()
        try spin(loop, "shard up") { one.shards[0].isUp && two.shards[0].isUp }
        // Redis still lists 1, 2, 3 until node one has written its members again and swept what left.
        let expected = [1, 3, 4].map { "\(one.nodeID)/\($0)" }
        let deadline = ContinuousClock.now + .seconds(10)
        var listed: [String] = []
        repeat {
            listed = try who(two, "chat.room", loop).members.map(\.client)
        } while listed != expected && ContinuousClock.now < deadline
        #expect(listed == expected)
        #expect(try who(two, "chat.room", loop).count == 3)
        one.stop()
        two.stop()
    }

    @Test func aShardThatLostItsDataIsWrittenAgainWithFreshJoins() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let one = try node(redis, loop)
        var rejoined: [String] = []
        one.onPresenceRejoined = { subject, member in rejoined.append("\(subject) \(member.text)") }
        one.presenceJoined("chat.room", connection: 1, user: "alice", group: nil)
        try awaitCount(one, "chat.room", 1, loop)
        _ = try redis.cli("FLUSHALL")
        try spin(loop, "joined again") { rejoined.count == 1 }
        #expect(rejoined == ["chat.room id=\(one.nodeID)/1,user=alice,since_s=0"])
        try awaitCount(one, "chat.room", 1, loop)
        one.stop()
    }

    @Test func aNodeDeclaredLostThatComesBackJoinsItsMembersAgain() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let paused = try node(redis, loop)
        let survivor = try node(redis, loop)
        var lost: [String] = []
        var rejoined: [String] = []
        survivor.onPresenceLost = { subject, member in lost.append("\(subject) \(member.client)") }
        paused.onPresenceRejoined = { subject, member in rejoined.append("\(subject) \(member.text)") }
        paused.presenceJoined("chat.room", connection: 4, user: nil, group: nil)
        try awaitCount(survivor, "chat.room", 1, loop)
        // The node stops renewing its lease (as one paused longer than the lease would), then renews again.
        paused.presence?.heartbeat?.cancel()
        try spin(loop, "declared lost") { lost.count == 1 }
        #expect(lost == ["chat.room \(paused.nodeID)/4"])
        #expect(try who(survivor, "chat.room", loop).count == 0)
        paused.presence?.heartbeat?.schedule(after: .milliseconds(100))
        try spin(loop, "joined again") { rejoined.count == 1 }
        #expect(rejoined == ["chat.room id=\(paused.nodeID)/4,user=-,since_s=0"])
        try awaitCount(survivor, "chat.room", 1, loop)
        // Back under a live lease: not declared lost again.
        let quiet = ContinuousClock.now + .milliseconds(1000)
        try spin(loop, "quiet") { ContinuousClock.now >= quiet }
        #expect(lost.count == 1 && rejoined.count == 1)
        #expect(try who(survivor, "chat.room", loop).count == 1)
        paused.stop()
        survivor.stop()
    }

    @Test func aThousandMembersOfALostNodeAreTakenAPageAtATimeInJoinOrder() throws {
        let redis = try RedisServerProcess()
        let loop = try EventLoop()
        let lost = try node(redis, loop)
        let survivor = try node(redis, loop)
        var announced: [String] = []
        var pages: [Int] = []
        var lastPass = -1
        var passes = 0
        loop.afterEachPass = { passes += 1 }
        survivor.onPresenceLost = { _, member in
            if passes != lastPass { pages.append(0); lastPass = passes }
            pages[pages.count - 1] += 1
            announced.append(member.client)
        }
        for id in 1...1000 { lost.presenceJoined("room.\(id % 7)", connection: UInt64(id), user: nil, group: nil) }
        try awaitCount(survivor, "room.0", 142, loop)
        lost.stopPresence()
        lost.stop()
        try spin(loop, "a thousand leaves") { announced.count == 1000 }
        #expect(announced == (1...1000).map { "\(lost.nodeID)/\($0)" }, "not in join order")
        #expect(pages.allSatisfy { $0 <= RedisEngine.presencePage }, "leaves per reply: \(pages)")
        for subject in 0..<7 { #expect(try who(survivor, "room.\(subject)", loop).count == 0) }
        loop.afterEachPass = nil
        survivor.stop()
    }
}
