import FanoutCrypto
import FanoutProtocol
import FoundationEssentials

/// One usable key of a JWKS (RFC 7517): an RSA or P-256 public key, with the `kid` tokens name it by and the
/// `alg` it is limited to, if the set says.
struct JSONWebKey: Sendable {
    /// A JWKS's bound on keys (a provider's set holds a handful, rotating).
    static let maxKeys = 100

    let kid: String?
    let alg: String?
    let key: PublicKey

    private struct Set: Decodable {
        let keys: [Member]
    }

    private struct Member: Decodable {
        let kty: String?
        let kid: String?
        let use: String?
        let alg: String?
        let n: String?
        let e: String?
        let crv: String?
        let x: String?
        let y: String?
    }

    /// The set's RSA and P-256 signature keys. Keys of other types, curves or uses (`enc`) are skipped, as a
    /// provider's set may hold them; a set with none left, a bad RSA or EC key, or two keys with one `kid` is a
    /// problem.
    static func set(_ bytes: [UInt8]) throws(TokenKeyProblem) -> [JSONWebKey] {
        let members: [Member]
        do {
            members = try JSONDecoder().decode(Set.self, from: Data(bytes)).keys
        } catch {
            throw TokenKeyProblem("token_jwks_file: not a JWKS (a JSON object whose \"keys\" is a list of keys)")
        }
        guard members.count <= maxKeys else { throw TokenKeyProblem("token_jwks_file: over \(maxKeys) keys") }
        var keys: [JSONWebKey] = []
        for (index, member) in members.enumerated() where member.use == nil || member.use == "sig" {
            let name = member.kid.map { "key '\($0)'" } ?? "key \(index + 1)"
            let der: [UInt8]
            switch (member.kty, member.crv) {
            case ("RSA", _):
                guard let n = member.n.flatMap(Base64.decodeURLSafe), let e = member.e.flatMap(Base64.decodeURLSafe),
                      !n.isEmpty, !e.isEmpty
                else { throw TokenKeyProblem("token_jwks_file: \(name): RSA key without base64url n and e") }
                der = DER.rsaPublicKey(modulus: n, exponent: e)
            case ("EC", "P-256"):
                guard let x = member.x.flatMap(Base64.decodeURLSafe), let y = member.y.flatMap(Base64.decodeURLSafe),
                      x.count == 32, y.count == 32
                else { throw TokenKeyProblem("token_jwks_file: \(name): P-256 key without 32-byte x and y") }
                der = DER.p256PublicKey(x: x, y: y)
            default:
                continue
            }
            if let kid = member.kid, keys.contains(where: { $0.kid == kid }) {
                throw TokenKeyProblem("token_jwks_file: two keys with kid '\(kid)'")
            }
            do {
                keys.append(JSONWebKey(kid: member.kid, alg: member.alg, key: try PublicKey(der: der)))
            } catch {
                throw TokenKeyProblem("token_jwks_file: \(name): \(error)")
            }
        }
        guard !keys.isEmpty else {
            throw TokenKeyProblem("token_jwks_file: no RSA or P-256 signature key (kty RSA, or kty EC with crv P-256)")
        }
        return keys
    }
}
