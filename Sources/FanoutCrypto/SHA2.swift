internal import CCrypto

/// The SHA-2 digests the token algorithms name (HS256/384/512; RS256 and ES256 use SHA-256).
public enum SHA2: Sendable, Equatable {
    case sha256, sha384, sha512

    /// The digest's length in bytes, which is also an HMAC's.
    public var length: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    func md(_ api: UnsafePointer<fanout_crypto_api>) -> OpaquePointer? {
        switch self {
        case .sha256: api.pointee.EVP_sha256()
        case .sha384: api.pointee.EVP_sha384()
        case .sha512: api.pointee.EVP_sha512()
        }
    }
}
