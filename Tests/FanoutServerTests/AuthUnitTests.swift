import FanoutEventLoop
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

    /// FIPS 180-4's examples, and messages around the 64-byte block and its 56-byte padding boundary.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256MatchesTheStandardsExamples(message: String, digest: String) {
        #expect(TokenHash.hex(Digest.sha256(Array(message.utf8))) == digest)
    }

    @Test(arguments: [
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
    ])
    func sha256AroundBlockBoundaries(length: Int, digest: String) {
        let message = (0..<length).map { UInt8($0) }
        #expect(TokenHash.hex(Digest.sha256(message)) == digest)
    }

    @Test func sha256OfAMillionAs() {
        let digest = Digest.sha256([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        #expect(TokenHash.hex(digest) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func hashesMadeBeforeStillVerify() throws {
        // From the auth fixture, made by an earlier build with swift-crypto's SHA-256.
        let stored = try TokenHash(parsing: "sha256$cd52f5e7bcf1b2d265d016db5bc6e951$"
            + "b90552b89e3564c3b944cbe7645234227c6158afd425b4a399ef73ba1145c7b0")
        #expect(stored.matches("sensor-secret-token"))
        #expect(!stored.matches("sensor-secret-tokeN"))
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
        var gate = ReadGate()
        var changed = gate.add(.commandsHeld)
        #expect(changed && !gate.isOpen)
        changed = gate.add(.outputFull)
        #expect(changed)
        changed = gate.lift(.outputFull)
        #expect(changed && !gate.isOpen, "a drained output does not end an AUTH delay")
        changed = gate.lift(.commandsHeld)
        #expect(changed && gate.isOpen)
        changed = gate.lift(.commandsHeld)
        #expect(!changed)
    }
}
