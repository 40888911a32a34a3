@testable import FanoutServer
import Testing

@Suite("TokenHash and Permissions")
struct AuthUnitTests {
    @Test func hashesVerifyOnlyTheirToken() throws {
        let hash = TokenHash.make(token: "s3cret-token")
        #expect(hash.matches("s3cret-token"))
        #expect(!hash.matches("s3cret-tokeN"))
        #expect(!hash.matches(""))
        let parsed = try TokenHash(parsing: hash.description)
        #expect(parsed == hash)
        #expect(parsed.matches("s3cret-token"))
        #expect(TokenHash.make(token: "same") != TokenHash.make(token: "same"), "every hash has its own salt")
    }

    @Test(arguments: ["", "sha256$00$00", "md5$0011223344556677$" + String(repeating: "0", count: 64),
                      "sha256$zz11223344556677$" + String(repeating: "0", count: 64), "sha256$0011223344556677$abc"])
    func malformedHashesAreRefused(text: String) {
        #expect(throws: ConfigurationProblem.self) { try TokenHash(parsing: text) }
    }

    @Test(arguments: [
        (">", "a", true), (">", "a.>", true), (">", ">", true), ("a.>", "a.b", true), ("a.>", "a.*.c", true),
        ("a.>", "a", false), ("a.>", ">", false), ("a.*", "a.b", true), ("a.*", "a.*", true), ("a.*", "a.>", false),
        ("a.b", "a.*", false), ("a.b", "a.b", true), ("*.b", "a.b", true), ("*.b", "a.c", false), ("a.*.c", "a.b.>", false),
    ])
    func coverage(outer: String, inner: String, covered: Bool) {
        #expect(Permissions.covers(outer, inner) == covered)
    }

    @Test func allowAndDenyLists() {
        let permissions = Permissions(publish: ["sensors.>"], publishDeny: ["sensors.admin.>"],
                                      subscribe: [">"], subscribeDeny: ["secret.>"])
        #expect(permissions.mayPublish("sensors.kitchen.temp"))
        #expect(!permissions.mayPublish("sensors.admin.reset"))
        #expect(!permissions.mayPublish("other"))
        #expect(permissions.maySubscribe(">"), "overlapping a denied subject is allowed, and filtered")
        #expect(!permissions.maySubscribe("secret.>"))
        #expect(!permissions.maySubscribe("secret.keys"))
        #expect(permissions.withholds("secret.keys"))
        #expect(!permissions.withholds("public.news"))
    }

    @Test func delayedConnectionsResumeOnlyWhenTheDelayEnds() {
        var state = ConnectionState.open
        #expect(state.handle(.delay) == .stopReading)
        #expect(state.handle(.outputDrained) == .none, "a drained output does not end an AUTH delay")
        #expect(state == .delayed)
        #expect(state.handle(.delayOver) == .resumeReading)
        #expect(state == .open)
        #expect(state.handle(.delayOver) == .none)
    }
}
