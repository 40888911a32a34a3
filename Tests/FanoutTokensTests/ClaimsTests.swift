import FanoutTokens
import Testing

@Suite struct ClaimsTests {
    let vectors = Vectors.shared

    private func verify(_ name: String, _ rules: TokenRules = TokenRules(), at offset: Int64 = 0)
        throws -> Result<VerifiedToken, TokenRejection>
    {
        try vectors.verifier(rules).verify(vectors.token(name), now: vectors.now + offset)
    }

    @Test func expiryCountsTheLeeway() throws {
        #expect(try verify("expired") == .failure(.expired))
        // exp is 3 s ago: inside the default 5 s leeway, outside a 2 s one.
        #expect((try? verify("expired_within_leeway").get()) != nil)
        #expect(try verify("expired_within_leeway", TokenRules(leewaySeconds: 2)) == .failure(.expired))
        // The valid token, at exp + leeway: expired.
        #expect(try verify("HS256", at: 600 + 5) == .failure(.expired))
        #expect((try? verify("HS256", at: 600 + 4).get()) != nil)
    }

    @Test func aFractionalExpiryIsRoundedDown() throws {
        // exp is now + 0.5: read as now, so with no leeway the token is good until a second before.
        let verified = try verify("fractional_exp", TokenRules(leewaySeconds: 0), at: -1).get()
        #expect(verified.expiresAt == vectors.now)
        #expect(try verify("fractional_exp", TokenRules(leewaySeconds: 0)) == .failure(.expired))
    }

    @Test func aTokenWithoutExpiryHasNone() throws {
        #expect(try verify("no_exp").get().expiresAt == nil)
    }

    @Test func notBeforeAndIssuedAtInTheFutureAreRefused() throws {
        #expect(try verify("not_yet_valid") == .failure(.notYetValid))
        #expect(try verify("issued_in_future") == .failure(.notYetValid))
        #expect((try? verify("not_yet_valid", at: 60 - 5).get()) != nil)
        #expect(try verify("not_yet_valid", at: 60 - 6) == .failure(.notYetValid))
    }

    @Test func issuerAndAudienceAreCheckedWhenConfigured() throws {
        let rules = TokenRules(issuer: "https://app.example", audience: "fanout")
        #expect((try? verify("issuer_and_audience", rules).get()) != nil)
        #expect((try? verify("audience_string", rules).get()) != nil)
        let otherIssuer = TokenRules(issuer: "https://other.example")
        #expect(try verify("issuer_and_audience", otherIssuer) == .failure(.wrongIssuer))
        #expect(try verify("issuer_and_audience", TokenRules(audience: "chat")) == .failure(.wrongAudience))
        #expect(try verify("audience_string", TokenRules(audience: "fanou")) == .failure(.wrongAudience))
        // A token with neither claim fails rules that ask for them; without rules both are ignored.
        #expect(try verify("HS256", TokenRules(issuer: "https://app.example")) == .failure(.wrongIssuer))
        #expect(try verify("HS256", TokenRules(audience: "fanout")) == .failure(.wrongAudience))
        #expect((try? verify("issuer_and_audience").get()) != nil)
    }

    @Test func claimsOfTheWrongShapeAreRefused() throws {
        #expect(try verify("no_subject") == .failure(.missingSubject))
        #expect(try verify("bad_pattern") == .failure(.invalidPattern))
        #expect(try verify("string_exp") == .failure(.malformed))
        #expect(try verify("crit") == .failure(.malformed))
    }

    @Test func reasonsNameTheFailureAndNothingElse() {
        let all: [TokenRejection] = [.tooLarge, .malformed, .unsupportedAlgorithm, .keyMismatch, .unknownKey,
                                     .badSignature, .expired, .notYetValid, .wrongIssuer, .wrongAudience,
                                     .missingSubject, .tooManyPatterns, .invalidPattern]
        #expect(Set(all.map(\.reason)).count == all.count)
        #expect(all.allSatisfy { !$0.reason.contains("\n") && !$0.reason.isEmpty })
    }
}
