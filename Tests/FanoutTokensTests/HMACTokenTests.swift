import FanoutTokens
import Testing

@Suite struct HMACTokenTests {
    let vectors = Vectors.shared

    @Test(arguments: ["HS256", "HS384", "HS512"])
    func acceptsEachHMACAlgorithm(_ name: String) throws {
        let verified = try vectors.verifier().verify(vectors.token(name), now: vectors.now).get()
        #expect(verified.subject == "user-1234")
        #expect(verified.expiresAt == vectors.now + 600)
        #expect(verified.grant == TokenGrant(publish: ["chat.room42.in"], subscribe: ["chat.room42.>", "user.1234"],
                                             subscribeDeny: ["chat.room42.admin"], admin: false))
    }

    @Test func refusesAnotherSecret() throws {
        let keys = try TokenKeys(hmacSecret: Array("another secret".utf8), publicKeyPEM: nil, jwks: nil)
        let result = TokenVerifier(keys: keys, rules: TokenRules()).verify(vectors.token("HS256"), now: vectors.now)
        #expect(result == .failure(.badSignature))
    }

    @Test func aTrailingLineEndOfTheSecretFileIsNotPartOfTheSecret() throws {
        let keys = try TokenKeys(hmacSecret: Array((vectors.hmac_secret + "\n").utf8), publicKeyPEM: nil, jwks: nil)
        let result = TokenVerifier(keys: keys, rules: TokenRules()).verify(vectors.token("HS256"), now: vectors.now)
        #expect((try? result.get())?.subject == "user-1234")
    }

    @Test func aTokenWithoutTheClaimIsGrantedNothing() throws {
        let verified = try vectors.verifier().verify(vectors.token("no_grant"), now: vectors.now).get()
        #expect(verified.grant == TokenGrant())
        #expect(verified.grant.patternCount == 0 && !verified.grant.admin)
    }

    @Test func looksLikeJWTTellsATokenFromAStaticOne() {
        #expect(TokenVerifier.looksLikeJWT(vectors.token("HS256")))
        #expect(TokenVerifier.looksLikeJWT(vectors.token("none_unsigned") + "x"))
        #expect(!TokenVerifier.looksLikeJWT(vectors.token("none_unsigned")))
        #expect(!TokenVerifier.looksLikeJWT("Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE"))
        #expect(!TokenVerifier.looksLikeJWT("a.b.c"))
        #expect(!TokenVerifier.looksLikeJWT("W10.e30.c2ln"))  // header `[]`: JSON, not an object
        #expect(!TokenVerifier.looksLikeJWT("e30..c2ln"))
    }
}
