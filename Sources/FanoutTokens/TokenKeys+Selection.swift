import FanoutCrypto

/// A key chosen for one token: the HMAC secret or a public key, already matched to the token's algorithm.
enum ChosenKey {
    case secret([UInt8])
    case publicKey(PublicKey)

    /// Whether `signature` is right for `message` under this key. A libcrypto failure counts as a bad signature:
    /// a token is never accepted unchecked.
    func verifies(_ signature: [UInt8], of message: UnsafeRawBufferPointer, _ algorithm: TokenAlgorithm) -> Bool {
        do {
            switch self {
            case .secret(let secret):
                guard let digest = algorithm.hmacDigest, signature.count == digest.length else { return false }
                let expected = try HMAC.authenticate(digest, key: secret, message: message)
                return try HMAC.constantTimeEqual(expected, signature)
            case .publicKey(let key):
                switch algorithm {
                case .rs256:
                    return try key.verifySHA256(signature: signature, message: message)
                case .es256:
                    // JWS carries R || S, 32 bytes each (RFC 7518 §3.4); libcrypto checks DER.
                    guard signature.count == 64 else { return false }
                    return try key.verifySHA256(signature: DER.ecdsaSignature(raw: signature), message: message)
                case .hs256, .hs384, .hs512:
                    return false
                }
            }
        } catch {
            return false
        }
    }
}

extension TokenKeys {
    /// The key for a token with `algorithm` and `kid`. The algorithm's family decides which keys are looked at
    /// at all: HS* only the HMAC secret, RS256 only RSA keys, ES256 only P-256 keys. Among public keys, a `kid`
    /// found in the JWKS wins, then the PEM key, then (for a token without `kid`) the JWKS's one key of that type.
    func key(for algorithm: TokenAlgorithm, kid: String?) throws(TokenRejection) -> ChosenKey {
        if algorithm.hmacDigest != nil {
            guard let hmacSecret else { throw .keyMismatch }
            return .secret(hmacSecret)
        }
        if let kid, let named = jwks.first(where: { $0.kid == kid }) {
            guard algorithm.fits(named.key.kind), named.alg == nil || named.alg == algorithm.rawValue else {
                throw .keyMismatch
            }
            return .publicKey(named.key)
        }
        if let publicKey, algorithm.fits(publicKey.kind) { return .publicKey(publicKey) }
        let fitting = jwks.filter { algorithm.fits($0.key.kind) && ($0.alg == nil || $0.alg == algorithm.rawValue) }
        if kid == nil, fitting.count == 1 { return .publicKey(fitting[0].key) }
        // Keys of this family exist but none is named by the token: a rotation the verifier has not seen yet.
        if !fitting.isEmpty || (kid != nil && !jwks.isEmpty) { throw .unknownKey }
        throw .keyMismatch
    }
}
