import FanoutClient
import FanoutEventLoop
import FanoutProtocol
import FanoutTestSupport
import Glibc
import Testing

/// Presence in the library (protocol 1.3) against a peer the test scripts line by line: the lines `who`, `kick`
/// and `subscribePresence` send, how they read the replies and the `$presence.` messages, and that a kicked
/// client stays closed where a lost one reconnects.
@Suite("Presence in the client library", .threadPerTest, .timeLimit(.minutes(1)))
struct PresenceClientTests {
    /// A client connected to a fresh peer, greeted without history (so subscribing sends `SUB`).
    private func connected(reconnect: ReconnectPolicy = .never) throws -> (FakePeer, EventLoop, FanoutClient) {
        let peer = try FakePeer()
        let loop = try EventLoop()
        var options = ClientOptions()
        options.reconnect = reconnect
        let client = FanoutClient(loop: loop, address: try SocketAddress(parsing: "127.0.0.1:\(peer.port)"),
                                  options: options)
        var greeted: Result<String, ClientError>?
        client.connect { greeted = $0 }
        try peer.accept()
        peer.write("+HELLO fanout/1 fake auth=none\n")
        try spin(loop) { greeted != nil }
        #expect((try? greeted?.get()) == "fake")
        return (peer, loop, client)
    }

    @Test func whoSendsTheSubjectAndLimitAndReadsTheCountAndMembers() throws {
        let (peer, loop, client) = try connected()
        defer { client.close(); peer.close() }

        var listing: Result<(count: Int, members: [PresenceMember]), ClientError>?
        client.who("chat.room1", limit: 2) { listing = $0 }
        #expect(try peer.readLine(spinning: loop) == "WHO chat.room1 2")
        peer.write("+OK 3 id=7,user=alice,since_s=12 id=8,user=-,since_s=3,group=workers\n")
        try spin(loop) { listing != nil }
        let answer = try #require(try? listing?.get())
        #expect(answer.count == 3, "the total, beyond the members listed")
        #expect(answer.members == [
            PresenceMember(client: "7", user: "alice", sinceSeconds: 12),
            PresenceMember(client: "8", user: nil, sinceSeconds: 3, group: "workers"),
        ])

        listing = nil
        client.who("chat.empty") { listing = $0 }
        #expect(try peer.readLine(spinning: loop) == "WHO chat.empty", "no limit: the server's default")
        peer.write("+OK 0\n")
        try spin(loop) { listing != nil }
        #expect((try? listing?.get())?.count == 0)
        #expect((try? listing?.get())?.members.isEmpty == true)

        listing = nil
        client.who("news.uk") { listing = $0 }
        _ = try peer.readLine(spinning: loop)
        peer.write("-ERR syntax no presence kept for news.uk\n")
        try spin(loop) { listing != nil }
        guard case .failure(.server(let error))? = listing else {
            throw PeerError("expected .server, got \(String(describing: listing))")
        }
        #expect(error == ProtocolError(.syntax, "no presence kept for news.uk"))
    }

    @Test func whoRefusesAReplyThatIsNotAListing() throws {
        let (peer, loop, client) = try connected()
        defer { client.close(); peer.close() }
        for reply in ["+OK 1 id=7,user=alice", "+OK two id=7,user=a,since_s=1", "+OK 0 id=7,user=a,since_s=1"] {
            var listing: Result<(count: Int, members: [PresenceMember]), ClientError>?
            client.who("chat.room1") { listing = $0 }
            _ = try peer.readLine(spinning: loop)
            peer.write(reply + "\n")
            try spin(loop) { listing != nil }
            guard case .failure(.protocolViolation)? = listing else {
                Issue.record("\(reply): expected a protocol violation, got \(String(describing: listing))")
                continue
            }
        }
    }

    @Test func badWordsOfWhoAndKickFailBeforeAnythingIsSent() throws {
        let (peer, loop, client) = try connected()
        defer { client.close(); peer.close() }
        var failures: [ClientError] = []
        let record: (Result<Int, ClientError>) -> Void = { if case .failure(let error) = $0 { failures.append(error) } }
        client.who("chat.*") { if case .failure(let error) = $0 { failures.append(error) } }
        client.who("chat.room1", limit: -1) { if case .failure(let error) = $0 { failures.append(error) } }
        client.kick("7 8", completion: record)
        client.kick("", completion: record)
        client.kick("7\nPUB x y", completion: record)
        client.kick("7", reason: "two\nlines", completion: record)
        client.kick("7", reason: String(repeating: "r", count: Command.kickReasonMaximum + 1), completion: record)
        client.kick("7", reason: " padded", completion: record)
        client.subscribePresence(["chat room"], handler: { _ in }, completion: record)
        #expect(failures.count == 9)
        for failure in failures {
            guard case .invalid = failure else {
                Issue.record("expected .invalid, got \(failure)")
                continue
            }
        }
        #expect(client.inFlight == 0)
        var pong = false
        client.ping { pong = (try? $0.get()) != nil }
        #expect(try peer.readLine(spinning: loop) == "PING", "nothing of the refused calls reached the peer")
        peer.write("+PONG\n")
        try spin(loop) { pong }
    }

    @Test func kickSendsTheTargetAndReasonAndReadsTheCount() throws {
        let (peer, loop, client) = try connected()
        defer { client.close(); peer.close() }
        var closed: Result<Int, ClientError>?
        client.kick("user=alice", reason: "spamming the room") { closed = $0 }
        #expect(try peer.readLine(spinning: loop) == "KICK user=alice spamming the room")
        peer.write("+OK 2\n")
        try spin(loop) { closed != nil }
        #expect((try? closed?.get()) == 2)

        closed = nil
        client.kick("n1/7") { closed = $0 }
        #expect(try peer.readLine(spinning: loop) == "KICK n1/7", "no reason: the server's default")
        peer.write("-ERR denied KICK needs an administrator\n")
        try spin(loop) { closed != nil }
        #expect(closed.flatMap { try? $0.get() } == nil)
        guard case .failure(.server(let error))? = closed else { throw PeerError("expected .server") }
        #expect(error.code == .denied)
    }

    @Test func presenceSubscriptionYieldsJoinsAndLeavesWithTheirSeqAndSurfacesWhatItCannotRead() throws {
        let (peer, loop, client) = try connected()
        defer { client.close(); peer.close() }
        var updates: [Result<PresenceUpdate, UnreadablePresence>] = []
        var subscribed: Result<Int, ClientError>?
        client.subscribePresence(["chat.room1", "jobs.>"], handler: { updates.append($0) }) { subscribed = $0 }
        #expect(try peer.readLine(spinning: loop) == "SUB $presence.chat.room1 $presence.jobs.>")
        peer.write("+OK 2\n")
        try spin(loop) { subscribed != nil }
        #expect(client.subscriptions == ["$presence.chat.room1", "$presence.jobs.>"])

        peer.write("MSG $presence.chat.room1 1 join id=7,user=alice,since_s=0\n")
        peer.write("MSG $presence.jobs.a 4 join id=9,user=-,since_s=0,group=workers\n")
        peer.write("MSG $presence.chat.room1 2 leave id=7,user=alice,since_s=12,reason=kicked\n")
        peer.write("MSG $presence.chat.room1 3 wave id=7\n")
        try spin(loop) { updates.count == 4 }
        let alice = PresenceMember(client: "7", user: "alice", sinceSeconds: 0)
        #expect(try updates[0].get()
            == PresenceUpdate(subject: "chat.room1", seq: 1, event: PresenceEvent(join: alice)))
        #expect(try updates[1].get() == PresenceUpdate(subject: "jobs.a", seq: 4, event: PresenceEvent(
            join: PresenceMember(client: "9", user: nil, sinceSeconds: 0, group: "workers"))))
        var left = alice
        left.sinceSeconds = 12
        #expect(try updates[2].get() == PresenceUpdate(subject: "chat.room1", seq: 2,
                                                       event: PresenceEvent(leave: left, reason: .kicked)))
        guard case .failure(let unreadable) = updates[3] else { throw PeerError("the unreadable event was dropped") }
        #expect(unreadable.message
            == Message(subject: "$presence.chat.room1", seq: 3, payload: Array("wave id=7".utf8)))

        var unsubscribed: Result<Int, ClientError>?
        client.unsubscribePresence(["chat.room1"]) { unsubscribed = $0 }
        #expect(try peer.readLine(spinning: loop) == "UNSUB $presence.chat.room1")
        peer.write("+OK 1\n")
        try spin(loop) { unsubscribed != nil }
        #expect(client.subscriptions == ["$presence.jobs.>"])
    }

    /// The control for the next test: a connection the server closes without a kick is reconnected.
    @Test func aLostConnectionIsReconnected() throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), jitter: 0)
        let (peer, loop, client) = try connected(reconnect: policy)
        defer { client.close(); peer.close() }
        var events: [ClientEvent] = []
        client.onEvent = { events.append($0) }
        peer.hangUp()
        try spin(loop) { events.contains(.reconnecting(attempt: 1, delay: .milliseconds(10))) }
        try spin(loop) { peer.hasWaitingConnection(within: 1) }
    }

    @Test func aKickedClientFailsWhatWaitsWithTheReasonAndNeverReconnects() throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), jitter: 0)
        let (peer, loop, client) = try connected(reconnect: policy)
        defer { client.close(); peer.close() }
        var events: [ClientEvent] = []
        client.onEvent = { events.append($0) }

        // The kicker kicks itself: its count comes first, then the farewell, which no command waits for.
        var closed: Result<Int, ClientError>?
        var pinged: Result<Duration, ClientError>?
        client.kick("7") { closed = $0 }
        client.ping { pinged = $0 }
        #expect(try peer.readLine(spinning: loop) == "KICK 7")
        #expect(try peer.readLine(spinning: loop) == "PING")
        peer.write("+OK 1\n-ERR kicked spamming the room\n")
        peer.hangUp()
        try spin(loop) { pinged != nil }
        #expect((try? closed?.get()) == 1)
        #expect(pinged.flatMap { try? $0.get() } == nil)
        guard case .failure(.kicked(let reason))? = pinged else {
            throw PeerError("the ping in flight should fail with .kicked, got \(String(describing: pinged))")
        }
        #expect(reason == "spamming the room")
        #expect(client.kickedReason == "spamming the room")
        #expect(events == [.kicked(reason: "spamming the room")], "no .disconnected, no .reconnecting")
        #expect(!client.isReady)

        // Well past the reconnect delay: no new connection, and a later command fails with the reason.
        let deadline = ContinuousClock.now + .milliseconds(300)
        while ContinuousClock.now < deadline {
            loop.runOnce(blocking: false)
            #expect(!peer.hasWaitingConnection(within: 5), "a kicked client does not reconnect")
        }
        var later: Result<Int, ClientError>?
        client.publish("a", "x") { later = $0 }
        guard case .failure(.kicked("spamming the room"))? = later else {
            throw PeerError("a command after the kick should fail with .kicked, got \(String(describing: later))")
        }
        #expect(events.count == 1)
    }

    private func spin(_ loop: EventLoop, until done: () -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !done() {
            guard ContinuousClock.now < deadline else { throw PeerError("timed out") }
            loop.runOnce(blocking: false)
            usleep(1000)
        }
    }
}
