@testable import FanoutServer
import FanoutProtocol
import Testing

extension InProcess {
    /// max_connections_per_user and user_publish_rate on the line protocol, with users from the configuration
    /// (token hashes, as the users file gives them): answered `-ERR limit`, never dropped.
    @Suite("User limits over TCP", .timeLimit(.minutes(1)))
    struct UserLimitTests {
        /// alice and bob, who may publish and subscribe anywhere.
        private static func harness(_ configure: (inout UserLimitSettings) -> Void) throws -> ServerHarness {
            try ServerHarness { configuration in
                configuration.auth.users = ["alice", "bob"].map {
                    User(name: $0, tokenHash: TokenHash.make(token: "\($0)-token"),
                         permissions: Permissions(publish: [">"], subscribe: [">"]))
                }
                configure(&configuration.userLimits)
            }
        }

        private static func authenticated(_ user: String, on harness: ServerHarness) throws -> HarnessPeer {
            let peer = try harness.connect()
            let reply = try harness.command("AUTH \(user)-token", on: peer)
            guard reply == "+OK" else { throw HarnessError.unexpected("+OK to AUTH", reply) }
            return peer
        }

        @Test func anAuthOverTheUsersConnectionsIsRefusedAndClosed() throws {
            let harness = try Self.harness { $0.maxConnectionsPerUser = 2 }
            let first = try Self.authenticated("alice", on: harness)
            _ = try Self.authenticated("alice", on: harness)
            #expect(try harness.command("AUTH alice-token", on: first) == "+OK", "AUTH again is not one more")
            let third = try harness.connect()
            #expect(try harness.command("AUTH alice-token", on: third)
                == "-ERR limit too many connections for user alice (max_connections_per_user 2)")
            try harness.run(until: { third.sawEnd }, "the refused connection closed")
            #expect(harness.server.userLimits.connectionRefusals == 1)
            _ = try Self.authenticated("bob", on: harness)
            first.close()
            try harness.run(until: { harness.server.userLimits.connections(of: "alice") == 1 }, "alice's departure")
            _ = try Self.authenticated("alice", on: harness)
        }

        @Test func aLoweredLimitRefusesNewConnectionsAndKeepsTheOpenOnes() throws {
            let harness = try Self.harness { $0.maxConnectionsPerUser = 3 }
            let kept = try (0..<3).map { _ in try Self.authenticated("alice", on: harness) }
            harness.server.configuration.userLimits.maxConnectionsPerUser = 1
            let late = try harness.connect()
            #expect(try harness.command("AUTH alice-token", on: late).hasPrefix("-ERR limit too many connections"))
            for peer in kept { #expect(try harness.command("PING", on: peer) == "+PONG") }
        }

        @Test func publishesOverTheUsersRateAreAnsweredAndNotPublished() throws {
            let harness = try Self.harness {
                $0.publishRate = 1
                $0.publishBurst = 3
            }
            let subscriber = try Self.authenticated("bob", on: harness)
            #expect(try harness.command("SUB t", on: subscriber) == "+OK 1")
            let one = try Self.authenticated("alice", on: harness)
            let two = try Self.authenticated("alice", on: harness)
            // Five in one write, on two connections of one user: the bucket is the user's.
            one.send("PUB t 1\nPUB t 2\nPUB t 3\n")
            let replies = try (0..<3).map { _ in try harness.reply(of: one) }
            #expect(replies == ["+OK 1", "+OK 1", "+OK 1"])
            let refused = "-ERR limit publish rate for user alice over user_publish_rate 1/s"
            #expect(try harness.command("PUB t 4", on: two) == refused)
            #expect(try harness.command("BPUB t 1\r\nx", on: two) == refused, "BPUB shares the bucket")
            #expect(try harness.command("PING", on: two) == "+PONG", "the payload of the refused BPUB was skipped")
            #expect(try harness.command("PUB t bob", on: subscriber) == "+OK 1", "bob has his own bucket")
            let delivered = try harness.linesBeforeFence(of: subscriber)
            #expect(delivered.filter { $0.hasPrefix("MSG t ") }.count == 4, "\(delivered)")
            #expect(harness.server.stats.published == 4)
            #expect(harness.server.userLimits.publishRefusals == 2)
        }

        @Test func withoutARateNothingIsCountedOrKept() throws {
            let harness = try Self.harness { $0.maxConnectionsPerUser = 5 }
            let peer = try Self.authenticated("alice", on: harness)
            for n in 0..<20 { peer.send("PUB t \(n)\n") }
            let replies = try (0..<20).map { _ in try harness.reply(of: peer) }
            #expect(replies.allSatisfy { $0 == "+OK 0" })
            #expect(harness.server.connections[peer.id]?.extras?.userLimit == nil, "no entry cached without a rate")
            #expect(harness.server.userLimits.publishRefusals == 0)
        }
    }
}
