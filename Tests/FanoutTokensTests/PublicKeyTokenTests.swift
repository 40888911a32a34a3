import FanoutTokens
import Testing

@Suite struct PublicKeyTokenTests {
    let vectors = Vectors.shared

    @Test func acceptsRS256WithTheRSAKey() throws {
        let verifier = TokenVerifier(keys: try vectors.keys(secret: false, pem: vectors.rsa_public_pem, jwks: false),
                                     rules: TokenRules())
        #expect(try verifier.verify(vectors.token("RS256"), now: vectors.now).get().subject == "user-1234")
        // The key pins the family: HS256 and ES256 tokens are not even tried against it.
        #expect(verifier.verify(vectors.token("HS256"), now: vectors.now) == .failure(.keyMismatch))
        #expect(verifier.verify(vectors.token("ES256"), now: vectors.now) == .failure(.keyMismatch))
    }

    @Test func acceptsAPKCS1RSAPublicKey() throws {
        let keys = try vectors.keys(secret: false, pem: vectors.rsa_public_pkcs1_pem, jwks: false)
        let result = TokenVerifier(keys: keys, rules: TokenRules()).verify(vectors.token("RS256"), now: vectors.now)
        #expect((try? result.get())?.subject == "user-1234")
    }

    @Test func acceptsES256WithTheP256Key() throws {
        let verifier = TokenVerifier(keys: try vectors.keys(secret: false, pem: vectors.ec_public_pem, jwks: false),
                                     rules: TokenRules())
        #expect(try verifier.verify(vectors.token("ES256"), now: vectors.now).get().subject == "user-1234")
        // R's first byte is zero: the DER integer made from it is shorter, and still the same signature.
        #expect(try verifier.verify(vectors.token("ES256_short_r"), now: vectors.now).get().subject == "user-1234")
        #expect(verifier.verify(vectors.token("RS256"), now: vectors.now) == .failure(.keyMismatch))
        #expect(verifier.verify(vectors.token("HS256"), now: vectors.now) == .failure(.keyMismatch))
        // Another P-256 key's signature is checked and refused.
        #expect(verifier.verify(vectors.token("jwks_e2"), now: vectors.now) == .failure(.badSignature))
    }

    @Test func anRSAPublicKeyOfferedAsAnHMACSecretIsRefused() throws {
        // An HS256 token whose HMAC key is the PEM text of the configured RSA public key.
        let token = vectors.token("rsa_pem_as_hmac_secret")
        let rsaOnly = TokenVerifier(keys: try vectors.keys(secret: false, pem: vectors.rsa_public_pem, jwks: false),
                                    rules: TokenRules())
        #expect(rsaOnly.verify(token, now: vectors.now) == .failure(.keyMismatch))
        let withJWKS = TokenVerifier(keys: try vectors.keys(secret: false, pem: nil, jwks: true), rules: TokenRules())
        #expect(withJWKS.verify(token, now: vectors.now) == .failure(.keyMismatch))
        // And the PEM cannot be configured as the secret either.
        #expect(throws: TokenKeyProblem.self) {
            try TokenKeys(hmacSecret: Array(vectors.rsa_public_pem.utf8), publicKeyPEM: nil, jwks: nil)
        }
    }

    @Test func jwksKeysArePickedByKid() throws {
        let verifier = TokenVerifier(keys: try vectors.keys(secret: false, pem: nil, jwks: true), rules: TokenRules())
        for name in ["r1", "r2", "e1", "e2"] {
            let verified = try verifier.verify(vectors.token("jwks_" + name), now: vectors.now).get()
            #expect(verified.subject == name + "-user")
        }
        #expect(verifier.verify(vectors.token("jwks_r2_signed_by_r1"), now: vectors.now) == .failure(.badSignature))
        #expect(verifier.verify(vectors.token("jwks_unknown_kid"), now: vectors.now) == .failure(.unknownKey))
        // Two RSA keys and no kid: which one is not guessed.
        #expect(verifier.verify(vectors.token("jwks_no_kid"), now: vectors.now) == .failure(.unknownKey))
        #expect(verifier.verify(vectors.token("jwks_e1_as_rs256"), now: vectors.now) == .failure(.keyMismatch))
        #expect(verifier.verify(vectors.token("HS256"), now: vectors.now) == .failure(.keyMismatch))
    }

    @Test func aJWKSWithOneKeyMatchesATokenWithoutKid() throws {
        let keys = try TokenKeys(hmacSecret: nil, publicKeyPEM: nil, jwks: Array(vectors.single_jwks.utf8))
        let verifier = TokenVerifier(keys: keys, rules: TokenRules())
        #expect(try verifier.verify(vectors.token("jwks_no_kid"), now: vectors.now).get().subject == "user-1234")
        #expect(try verifier.verify(vectors.token("RS256"), now: vectors.now).get().subject == "user-1234")
    }

    @Test func oneVerifierServesSeveralThreadsAtOnce() async throws {
        // Sendable: keys are only read after they are made (each check has its own libcrypto context).
        let keys = try TokenKeys(hmacSecret: Array(vectors.hmac_secret.utf8), publicKeyPEM: nil,
                                 jwks: Array(vectors.jwks.utf8))
        let verifier = TokenVerifier(keys: keys, rules: TokenRules())
        let (names, now) = (["HS256", "jwks_r1", "jwks_e1", "jwks_e2"], vectors.now)
        let tokens = names.map(vectors.token)
        let verified = await withTaskGroup(of: Int.self) { group in
            for token in tokens {
                group.addTask {
                    (0..<50).filter { _ in (try? verifier.verify(token, now: now).get()) != nil }.count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(verified == tokens.count * 50)
    }

    @Test func everyKindOfKeyAtOnce() throws {
        let keys = try TokenKeys(hmacSecret: Array(vectors.hmac_secret.utf8),
                                 publicKeyPEM: Array(vectors.ec_public_pem.utf8), jwks: Array(vectors.jwks.utf8))
        let verifier = TokenVerifier(keys: keys, rules: TokenRules())
        for name in ["HS256", "HS384", "HS512", "ES256", "jwks_r1", "jwks_r2", "jwks_e2"] {
            #expect((try? verifier.verify(vectors.token(name), now: vectors.now).get()) != nil, "\(name)")
        }
        // RS256 without kid: the PEM key is P-256 and the JWKS has two RSA keys, so no key is named.
        #expect(verifier.verify(vectors.token("RS256"), now: vectors.now) == .failure(.unknownKey))
    }
}
