import FanoutTokens
import Foundation
import Testing

@Suite struct TokenKeysTests {
    let vectors = Vectors.shared

    private func problem(secret: String? = nil, pem: String? = nil, jwks: String? = nil) -> String? {
        do {
            _ = try TokenKeys(hmacSecret: secret.map { Array($0.utf8) }, publicKeyPEM: pem.map { Array($0.utf8) },
                              jwks: jwks.map { Array($0.utf8) })
            return nil
        } catch {
            return error.description
        }
    }

    @Test func aProblemNamesTheSettingAndNeverTheSecret() throws {
        #expect(problem()?.contains("no token key") == true)
        #expect(problem(secret: "\n")?.contains("token_secret_file: the secret is empty") == true)
        let pemSecret = try #require(problem(secret: vectors.rsa_public_pem))
        #expect(pemSecret.contains("token_secret_file") && !pemSecret.contains("MII"))
    }

    @Test func aPublicKeyFileMustHoldAnRSAOrP256PublicKey() throws {
        #expect(problem(pem: "nothing here")?.contains("no PEM block") == true)
        let privateKey = "-----BEGIN PRIVATE KEY-----\nMIIsecretbytes\n-----END PRIVATE KEY-----\n"
        let privateProblem = try #require(problem(pem: privateKey))
        #expect(privateProblem.contains("private key") && !privateProblem.contains("secretbytes"))
        #expect(problem(pem: "-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----")?.contains("base64") == true)
        #expect(problem(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----")?.contains("DER") == true)
        #expect(problem(pem: vectors.rsa_1024_public_pem)?.contains("1024 bits") == true)
        #expect(problem(pem: vectors.secp256k1_public_pem)?.contains("not P-256") == true)
        #expect(problem(pem: vectors.rsa_public_pem) == nil)
        #expect(problem(pem: vectors.ec_public_pem) == nil)
    }

    @Test func aJWKSMustHoldASignatureKey() {
        #expect(problem(jwks: "[]")?.contains("not a JWKS") == true)
        let octOnly = #"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#
        #expect(problem(jwks: octOnly)?.contains("no RSA or P-256") == true)
        let badPoint = #"{"keys": [{"kty": "EC", "crv": "P-256", "x": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "#
            + #""y": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE"}]}"#
        #expect(problem(jwks: badPoint)?.contains("key 1") == true)
        #expect(problem(jwks: #"{"keys": [{"kty": "RSA", "kid": "a", "n": "AQAB"}]}"#)?.contains("key 'a'") == true)
        let twice = vectors.jwks.replacingOccurrences(of: "\"kid\": \"r2\"", with: "\"kid\": \"r1\"")
        #expect(twice != vectors.jwks)
        #expect(problem(jwks: twice)?.contains("two keys with kid 'r1'") == true)
        #expect(problem(jwks: vectors.jwks) == nil)
    }
}
