import FanoutTokens
import Foundation

/// Fixtures/vectors.json: test-only keys and tokens minted by PyJWT (Fixtures/make_vectors.py writes it).
struct Vectors: Decodable {
    let now: Int64
    let hmac_secret: String
    let rsa_public_pem: String
    let rsa_public_pkcs1_pem: String
    let ec_public_pem: String
    let jwks: String
    let single_jwks: String
    let rsa_1024_public_pem: String
    let secp256k1_public_pem: String
    let tokens: [String: String]

    static let shared: Vectors = {
        let url = Bundle.module.url(forResource: "vectors", withExtension: "json", subdirectory: "Fixtures")!
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    func token(_ name: String) -> String {
        guard let token = tokens[name] else { fatalError("no vector named \(name)") }
        return token
    }

    /// The verifier with every kind of key configured.
    func verifier(_ rules: TokenRules = TokenRules()) throws -> TokenVerifier {
        TokenVerifier(keys: try keys(secret: true, pem: nil, jwks: false), rules: rules)
    }

    func keys(secret: Bool, pem: String?, jwks: Bool) throws -> TokenKeys {
        try TokenKeys(hmacSecret: secret ? Array(hmac_secret.utf8) : nil, publicKeyPEM: pem.map { Array($0.utf8) },
                      jwks: jwks ? Array(self.jwks.utf8) : nil)
    }
}
