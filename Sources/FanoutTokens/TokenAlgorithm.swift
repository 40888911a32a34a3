import FanoutCrypto

/// The JWS algorithms accepted (RFC 7518 §3.1). `none` and everything else are refused before any key is
/// looked at.
enum TokenAlgorithm: String, Sendable {
    case hs256 = "HS256", hs384 = "HS384", hs512 = "HS512", rs256 = "RS256", es256 = "ES256"

    /// The digest of an HMAC algorithm; nil for the public-key ones.
    var hmacDigest: SHA2? {
        switch self {
        case .hs256: .sha256
        case .hs384: .sha384
        case .hs512: .sha512
        case .rs256, .es256: nil
        }
    }

    /// Whether `kind` is the key this algorithm needs: the key pins the family.
    func fits(_ kind: PublicKey.Kind) -> Bool {
        switch (self, kind) {
        case (.rs256, .rsa), (.es256, .p256): true
        default: false
        }
    }
}
