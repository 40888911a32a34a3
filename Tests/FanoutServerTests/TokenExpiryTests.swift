@testable import FanoutServer
import FanoutEventLoop
import FanoutProtocol
import Glibc
import Testing

/// HS256 tokens made in the test, as an application's backend signs them: HMAC-SHA-256 over
/// `<header>.<payload>` in unpadded base64url (RFC 7515).
enum TestTokens {
    static let secret = Array("in-process-token-secret-of-32-bytes".utf8)

    static func hs256(_ claims: String, secret: [UInt8] = TestTokens.secret) -> String {
        let header = Base64.encodeURLSafe(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let signingInput = header + "." + Base64.encodeURLSafe(Array(claims.utf8))
        return signingInput + "." + Base64.encodeURLSafe(hmacSHA256(key: secret, Array(signingInput.utf8)))
    }

    /// `sub` with `exp` `seconds` from now and the grant `fanout` (JSON).
    static func hs256(sub: String, expiresIn seconds: Int64, fanout: String) -> String {
        hs256(#"{"sub":"\#(sub)","exp":\#(Authenticator.unixNow() + seconds),"fanout":\#(fanout)}"#)
    }

    static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? Digest.sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = Digest.sha256(block.map { $0 ^ 0x36 } + message)
        return Digest.sha256(block.map { $0 ^ 0x5C } + inner)
    }
}

/// A token connection's expiry and refresh, timed by the server's own timers on a loop the test steps: the
/// push at `exp`, the close after token_expiry_grace, and a fresh AUTH that keeps the connection.
@Suite("Token expiry and refresh", .threadPerTest, .timeLimit(.minutes(1)))
struct TokenExpiryTests {
    private static func harness() throws -> ServerHarness {
        try ServerHarness { configuration in
            configuration.auth.tokens.secret = TestTokens.secret
            configuration.auth.tokens.leewaySeconds = 0
            configuration.auth.tokens.expiryGrace = .seconds(1)
        }
    }

    private static let everything = #"{"publish":[">"],"subscribe":[">"]}"#

    @Test func anExpiredTokenIsToldThenClosedAfterTheGrace() throws {
        let harness = try Self.harness()
        let peer = try harness.connect()
        #expect(try harness.command("AUTH \(TestTokens.hs256(sub: "alice", expiresIn: 2, fanout: Self.everything))",
                                    on: peer) == "+OK")
        #expect(try harness.command("SUB news", on: peer) == "+OK 1")
        let push = try harness.nextLine(of: peer, timeout: .seconds(5))
        #expect(push == "-ERR auth-expired token expired; send AUTH with a fresh token within 1s")
        #expect(try harness.command("PING during-grace", on: peer) == "+PONG during-grace", "commands keep working")
        #expect(try harness.nextLine(of: peer, timeout: .seconds(3)) == "-ERR auth-expired closing")
        try harness.run(until: { !harness.isConnected(peer) }, timeout: .seconds(3), "the close")
        #expect(harness.server.stats.tokensExpired == 1)
    }

    @Test func aRefreshKeepsTheConnectionAndDropsWhatTheNewGrantForbids() throws {
        let harness = try Self.harness()
        let subscriber = try harness.connect()
        let first = TestTokens.hs256(sub: "alice", expiresIn: 2, fanout: #"{"subscribe":["a.>","b.>"]}"#)
        #expect(try harness.command("AUTH \(first)", on: subscriber) == "+OK")
        #expect(try harness.command("SUB a.x b.y", on: subscriber) == "+OK 2")
        #expect(try harness.nextLine(of: subscriber, timeout: .seconds(5)).hasPrefix("-ERR auth-expired token expired"))
        let fresh = TestTokens.hs256(sub: "alice", expiresIn: 60, fanout: #"{"subscribe":["a.>"]}"#)
        #expect(try harness.command("AUTH \(fresh)", on: subscriber) == "+OK")
        #expect(try harness.nextLine(of: subscriber) == "-ERR denied revoked: no longer allowed to subscribe to b.y")
        let session = try #require(harness.server.auth.tokenSessions[subscriber.id])
        #expect(!session.inGrace, "the grace ended with the refresh: no close is pending")
        #expect(session.timer?.isScheduled == true, "the fresh token's expiry is scheduled instead")
        #expect(harness.server.stats.tokenRefreshes == 1)
        let publisher = try harness.connect()
        let publishing = TestTokens.hs256(sub: "bob", expiresIn: 60, fanout: #"{"publish":[">"]}"#)
        #expect(try harness.command("AUTH \(publishing)", on: publisher) == "+OK")
        #expect(try harness.command("PUB a.x after-refresh", on: publisher) == "+OK 1")
        #expect(try harness.nextLine(of: subscriber) == "MSG a.x 1 after-refresh", "the kept subscription delivers")
        #expect(try harness.command("PUB b.y gone", on: publisher) == "+OK 0", "the dropped one does not")
        #expect(try harness.command("SUB b.z", on: subscriber).hasPrefix("-ERR denied "), "the new grant applies")
    }

    @Test func aTokenForAnotherUserIsRefusedAndTheSessionKept() throws {
        let harness = try Self.harness()
        let peer = try harness.connect()
        #expect(try harness.command("AUTH \(TestTokens.hs256(sub: "alice", expiresIn: 60, fanout: Self.everything))",
                                    on: peer) == "+OK")
        let other = TestTokens.hs256(sub: "mallory", expiresIn: 60, fanout: Self.everything)
        #expect(try harness.command("AUTH \(other)", on: peer) == "-ERR denied token is for another user")
        #expect(harness.server.auth.userName(of: try #require(harness.server.connections[peer.id])) == "alice")
        #expect(try harness.command("SUB news", on: peer) == "+OK 1", "the old token stays in force")
    }

    @Test func aTokenWithoutTheClaimMayDoNothingAndClientsNamesItsUser() throws {
        let harness = try Self.harness()
        let bare = try harness.connect()
        #expect(try harness.command("AUTH \(TestTokens.hs256(#"{"sub":"carol"}"#))", on: bare) == "+OK")
        #expect(try harness.command("SUB news", on: bare).hasPrefix("-ERR denied "))
        #expect(try harness.command("PUB news x", on: bare).hasPrefix("-ERR denied "))
        #expect(try harness.command("PING", on: bare) == "+PONG")
        let admin = try harness.connect()
        let token = TestTokens.hs256(sub: "dave", expiresIn: 60, fanout: #"{"admin":true}"#)
        #expect(try harness.command("AUTH \(token)", on: admin) == "+OK")
        let clients = try harness.command("CLIENTS", on: admin)
        #expect(clients.contains("id=\(bare.id),") && clients.contains(",user=carol"), "\(clients)")
        #expect(clients.contains(",user=dave"), "\(clients)")
        #expect(harness.server.auth.tokenSessions[bare.id]?.timer == nil, "no exp: no timer")
    }

    /// A users-file token sent after an application token replaces it: the token's expiry no longer applies.
    @Test func aUsersFileTokenEndsTheTokensExpiry() throws {
        let harness = try ServerHarness { configuration in
            configuration.auth.tokens.secret = TestTokens.secret
            configuration.auth.users = [User(name: "alice", tokenHash: TokenHash.make(token: "static-token-of-alice"),
                                             permissions: Permissions(subscribe: [">"]))]
        }
        let peer = try harness.connect()
        let token = TestTokens.hs256(sub: "alice", expiresIn: 60, fanout: #"{"subscribe":["a"]}"#)
        #expect(try harness.command("AUTH \(token)", on: peer) == "+OK")
        #expect(harness.server.auth.tokenSessions[peer.id] != nil)
        #expect(try harness.command("AUTH static-token-of-alice", on: peer) == "+OK")
        #expect(harness.server.auth.tokenSessions[peer.id] == nil, "no expiry timer is left behind")
        #expect(try harness.command("SUB b", on: peer) == "+OK 1", "the users-file permissions apply")
    }

    /// An `exp` years away is reached in steps a timer can hold.
    @Test func aFarExpiryIsWaitedForInSteps() {
        #expect(TokenSession.wait(until: 1_000, from: 990) == 10)
        #expect(TokenSession.wait(until: 990, from: 1_000) == 0, "already expired: at once")
        #expect(TokenSession.wait(until: Int64.max, from: 1_000) == TokenSession.longestWait)
    }

    @Test func aBadTokenIsAFailedAuth() throws {
        let harness = try Self.harness()
        let peer = try harness.connect()
        let forged = TestTokens.hs256(sub: "alice", expiresIn: 60, fanout: Self.everything)
        let wrongKey = TestTokens.hs256(#"{"sub":"alice"}"#, secret: Array("another-secret".utf8))
        #expect(try harness.command("AUTH \(wrongKey)", on: peer) == "-ERR denied invalid token")
        #expect(harness.server.auth.sessions[peer.id]?.failures == 1)
        #expect(harness.server.stats.tokenFailures == 1)
        #expect(harness.server.auth.throttle.buckets["127.0.0.1"]?.tokens == AuthThrottle.burst - 1,
                "counted in the address's failed-AUTH throttle")
        let expired = TestTokens.hs256(sub: "alice", expiresIn: -60, fanout: Self.everything)
        #expect(try harness.command("AUTH \(expired)", on: peer) == "-ERR denied invalid token")
        #expect(try harness.command("AUTH \(forged)", on: peer) == "+OK")
    }
}
