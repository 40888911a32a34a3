import FanoutProtocol
import FanoutTestSupport
import FanoutTokens
import Testing

@Suite struct AttackTests {
    let vectors = Vectors.shared

    private func verify(_ token: String) throws -> Result<VerifiedToken, TokenRejection> {
        try vectors.verifier().verify(token, now: vectors.now)
    }

    /// The HMAC secret and the public key that `name`'s token needs.
    private func verifierFor(_ name: String) throws -> TokenVerifier {
        let pem = name == "ES256" ? vectors.ec_public_pem : vectors.rsa_public_pem
        let keys = try TokenKeys(hmacSecret: Array(vectors.hmac_secret.utf8), publicKeyPEM: Array(pem.utf8), jwks: nil)
        return TokenVerifier(keys: keys, rules: TokenRules())
    }

    private func parts(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    private func json(_ part: String) -> String {
        String(decoding: Base64.decodeURLSafe(part)!, as: UTF8.self)
    }

    @Test(arguments: ["HS256", "HS512", "RS256", "ES256"])
    func tamperedHeaderPayloadOrSignatureDoNotVerify(_ name: String) throws {
        let verifier = try verifierFor(name)
        let token = vectors.token(name)
        #expect((try? verifier.verify(token, now: vectors.now).get()) != nil)
        let p = parts(token)
        let header = Base64.encodeURLSafe(Array(json(p[0]).replacingOccurrences(of: "}", with: #","x":1}"#).utf8))
        let newHeader = [header, p[1], p[2]].joined(separator: ".")
        #expect(verifier.verify(newHeader, now: vectors.now) == .failure(.badSignature))
        let admin = json(p[1]).replacingOccurrences(of: #""admin":false"#, with: #""admin":true"#)
        #expect(admin != json(p[1]))
        let payload = Base64.encodeURLSafe(Array(admin.utf8))
        let newPayload = [p[0], payload, p[2]].joined(separator: ".")
        #expect(verifier.verify(newPayload, now: vectors.now) == .failure(.badSignature))
        var signature = Base64.decodeURLSafe(p[2])!
        signature[signature.count / 2] ^= 0x01
        let flipped = [p[0], p[1], Base64.encodeURLSafe(signature)].joined(separator: ".")
        #expect(verifier.verify(flipped, now: vectors.now) == .failure(.badSignature))
        #expect(verifier.verify([p[0], p[1], ""].joined(separator: "."), now: vectors.now) == .failure(.badSignature))
    }

    @Test func algNoneIsRefusedWithAndWithoutASignature() throws {
        #expect(try verify(vectors.token("none_unsigned")) == .failure(.unsupportedAlgorithm))
        #expect(try verify(vectors.token("none_signed")) == .failure(.unsupportedAlgorithm))
        let p = parts(vectors.token("HS256"))
        for alg in ["none", "None", "NONE", "hs256", "HS1", "PS256", "ES384", "EdDSA", ""] {
            let header = Base64.encodeURLSafe(Array(#"{"alg":"\#(alg)"}"#.utf8))
            let token = [header, p[1], p[2]].joined(separator: ".")
            #expect(try verify(token) == .failure(.unsupportedAlgorithm), "\(alg)")
        }
    }

    @Test func aMegabyteTokenIsRefusedUnread() throws {
        let verifier = try vectors.verifier()
        let huge = "eyJhbGciOiJIUzI1NiJ9." + String(repeating: "A", count: 1 << 20) + ".c2ln"
        let started = ContinuousClock.now
        #expect(verifier.verify(huge, now: vectors.now) == .failure(.tooLarge))
        #expect(ContinuousClock.now - started < .milliseconds(50))
        #expect(TokenVerifier.looksLikeJWT(huge))
        // The bound is exact: one byte under it is read (and here refused for its signature).
        let edge = "eyJhbGciOiJIUzI1NiJ9." + String(repeating: "A", count: TokenVerifier.maxTokenBytes - 26) + ".c2ln"
        #expect(edge.utf8.count == TokenVerifier.maxTokenBytes)
        #expect(verifier.verify(edge, now: vectors.now) == .failure(.badSignature))
        #expect(verifier.verify(edge + "A", now: vectors.now) == .failure(.tooLarge))
    }

    @Test func patternsAreBoundedAtAThousand() throws {
        let verifier = try vectors.verifier()
        // 10,000 patterns cannot fit in 32 KiB of token (each takes at least 4 bytes of JSON, 5 of base64url): the
        // size check refuses such a token before its signature or JSON is looked at.
        let tenThousand = mintHS256(payload: payload(subscribe: (0..<10_000).map { "s\($0)" }))
        let started = ContinuousClock.now
        #expect(verifier.verify(tenThousand, now: vectors.now) == .failure(.tooLarge))
        #expect(ContinuousClock.now - started < .milliseconds(50))
        // Within the size bound, the pattern bound: 1,001 refused, 1,000 granted.
        let over = mintHS256(payload: payload(subscribe: (0...1000).map { "s\($0)" }))
        #expect(over.utf8.count < TokenVerifier.maxTokenBytes)
        #expect(verifier.verify(over, now: vectors.now) == .failure(.tooManyPatterns))
        let granted = try verifier.verify(mintHS256(payload: payload(subscribe: (0..<1000).map { "s\($0)" })),
                                          now: vectors.now).get()
        #expect(granted.grant.subscribe.count == 1000)
    }

    @Test func malformedTokensAreRefusedAsSuch() throws {
        let p = parts(vectors.token("HS256"))
        let malformed = [
            "", ".", "..", "a.b", "a.b.c.d", p[0] + "." + p[1], p.joined(separator: ".") + ".",
            "!!!." + p[1] + "." + p[2], p[0] + ".%%%." + p[2], p[0] + "." + p[1] + ".+/==",
            // base64url with padding, and with spare bits set (not the canonical encoding of its bytes)
            p[0] + "=." + p[1] + "." + p[2], String(p[0].dropLast()) + "1." + p[1] + "." + p[2],
            Base64.encodeURLSafe(Array("{".utf8)) + "." + p[1] + "." + p[2],
            Base64.encodeURLSafe(Array(#"["HS256"]"#.utf8)) + "." + p[1] + "." + p[2],
            Base64.encodeURLSafe(Array(#"{"alg":256}"#.utf8)) + "." + p[1] + "." + p[2],
            Base64.encodeURLSafe(Array(#"{"typ":"JWT"}"#.utf8)) + "." + p[1] + "." + p[2],
            mintHS256(payload: "not json"), mintHS256(payload: "[1,2]"), mintHS256(payload: #"{"sub":"a""#),
            mintHS256(payload: #"{"sub":"a","exp":"soon"}"#), mintHS256(payload: #"{"sub":"a","aud":7}"#),
            mintHS256(payload: #"{"sub":"a","fanout":{"subscribe":"a.>"}}"#),
            mintHS256(payload: #"{"sub":"a","fanout":{"admin":"yes"}}"#),
            mintHS256(payload: #"{"sub":"a","fanout":[]}"#),
            mintHS256(payload: String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)),
            mintHS256(payload: #"{"sub":"a","x":"# + String(repeating: "[", count: 10_000) + "}"),
        ]
        for token in malformed {
            #expect(try verify(token) == .failure(.malformed), "\(token.prefix(80))")
        }
    }

    @Test func deepNestingIsBoundedByTheTokenSize() throws {
        // Levels inside an unknown claim of a signed token: the decoder refuses 512 and more (its own limit), up
        // to the 10,000 that fit in the size bound; fewer are skipped.
        func nested(_ depth: Int) -> String {
            mintHS256(payload: #"{"sub":"a","x":"# + String(repeating: "[", count: depth)
                + String(repeating: "]", count: depth) + "}")
        }
        #expect(nested(10_000).utf8.count < TokenVerifier.maxTokenBytes)
        #expect(try verify(nested(10_000)) == .failure(.malformed))
        #expect(try verify(nested(512)) == .failure(.malformed))
        #expect(try verify(nested(510)).get().subject == "a")
    }

    @Test func subjectsMustBeUsableUserNames() throws {
        for sub in ["", "two words", "tab\\there", "line\\nbreak", String(repeating: "u", count: 257)] {
            #expect(try verify(mintHS256(payload: payload(sub: sub, subscribe: []))) == .failure(.missingSubject))
        }
        #expect(try verify(mintHS256(payload: #"{"sub":42}"#)) == .failure(.malformed))
        let longest = String(repeating: "u", count: 256)
        #expect(try verify(mintHS256(payload: payload(sub: longest, subscribe: []))).get().subject == longest)
        #expect(try verify(mintHS256(payload: payload(sub: "zoë@example.com", subscribe: []))).get().subject
            == "zoë@example.com")
    }

    @Test func aDuplicateMemberTakesTheFirstValue() throws {
        // FoundationEssentials' JSONDecoder keeps the first of duplicate members; the token means that.
        let verified = try verify(mintHS256(payload: #"{"sub":"first","sub":"last"}"#)).get()
        #expect(verified.subject == "first")
    }

    @Test(arguments: ["HS256", "RS256", "ES256"])
    func randomMutationsOfAValidTokenNeverVerify(_ name: String) throws {
        let verifier = try verifierFor(name)
        let token = Array(vectors.token(name).utf8)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ".utf8)
        var random = SeededGenerator(seed: 38)
        var tried = 0
        while tried < 400 {
            var mutated = token
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0..<mutated.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: mutated[at] = alphabet.randomElement(using: &random)!
                case 1: mutated.insert(alphabet.randomElement(using: &random)!, at: at)
                case 2: mutated.remove(at: at)
                default: mutated[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
                }
            }
            guard mutated != token else { continue }
            tried += 1
            let result = verifier.verify(String(decoding: mutated, as: UTF8.self), now: vectors.now)
            #expect((try? result.get()) == nil, "\(String(decoding: mutated, as: UTF8.self))")
        }
    }
}
