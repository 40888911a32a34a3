internal import CCrypto

/// A public key for checking signatures: RSA (RS256) or EC on P-256 (ES256), read from DER
/// SubjectPublicKeyInfo. Other key types and curves are refused when the key is read, so a verifier only ever
/// meets these two.
///
/// Sendable: the EVP_PKEY is only read after init (each verification makes its own EVP_MD_CTX), which
/// OpenSSL 3 allows from any number of threads at once; it is freed in deinit, when no one holds the key.
public final class PublicKey: @unchecked Sendable {
    public enum Kind: Sendable, Equatable {
        /// RSA with its modulus's size in bits.
        case rsa(bits: Int)
        /// ECDSA on NIST P-256 (prime256v1).
        case p256
    }

    /// RSA moduli below this are refused: 2048 bits is the floor RFC 7518 §3.3 sets for RS256.
    public static let minimumRSABits = 2048

    public let kind: Kind
    private let key: OpaquePointer

    /// Reads DER SubjectPublicKeyInfo. The error says what is wrong with the key, never its bytes.
    public init(der: [UInt8]) throws(CryptoError) {
        let api = try libcrypto()
        guard !der.isEmpty, der.count <= 1 << 20 else { throw CryptoError("public key: empty or over 1 MiB") }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { der in
            var cursor = der.baseAddress
            return api.pointee.d2i_PUBKEY(nil, &cursor, der.count)
        }
        guard let parsed else {
            api.pointee.ERR_clear_error()
            throw CryptoError("public key: not a DER SubjectPublicKeyInfo that libcrypto can read")
        }
        switch api.pointee.EVP_PKEY_get_base_id(parsed) {
        case EVP_PKEY_RSA:
            let bits = Int(api.pointee.EVP_PKEY_get_bits(parsed))
            guard bits >= Self.minimumRSABits else {
                api.pointee.EVP_PKEY_free(parsed)
                throw CryptoError("public key: RSA key of \(bits) bits, under the \(Self.minimumRSABits) RS256 needs")
            }
            kind = .rsa(bits: bits)
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            let named = api.pointee.EVP_PKEY_get_group_name(parsed, &name, name.count, &length) == 1
            let group = named ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            guard group == "prime256v1" || group == "P-256" else {
                api.pointee.EVP_PKEY_free(parsed)
                api.pointee.ERR_clear_error()
                throw CryptoError("public key: EC key on curve '\(group)', not P-256 (ES256)")
            }
            kind = .p256
        default:
            api.pointee.EVP_PKEY_free(parsed)
            throw CryptoError("public key: neither RSA nor EC (only RS256 and ES256 keys are supported)")
        }
        key = parsed
    }

    deinit {
        // The library was loaded when the key was read, so it is there.
        if let api = fanout_crypto() { api.pointee.EVP_PKEY_free(key) }
    }

    /// Whether `signature` is this key's SHA-256 signature of `message`: RSASSA-PKCS1-v1_5 for RSA, DER ECDSA
    /// (SEQUENCE of r and s) for P-256. False for any signature that does not verify, however malformed.
    public func verifySHA256(signature: [UInt8], message: UnsafeRawBufferPointer) throws(CryptoError) -> Bool {
        let api = try libcrypto()
        guard let context = api.pointee.EVP_MD_CTX_new() else { throw CryptoError("EVP_MD_CTX_new failed") }
        defer { api.pointee.EVP_MD_CTX_free(context) }
        guard api.pointee.EVP_DigestVerifyInit(context, nil, api.pointee.EVP_sha256(), nil, key) == 1 else {
            api.pointee.ERR_clear_error()
            throw CryptoError("EVP_DigestVerifyInit failed")
        }
        var empty: UInt8 = 0
        let result = signature.withUnsafeBufferPointer { signature in
            withUnsafePointer(to: &empty) { empty in
                api.pointee.EVP_DigestVerify(context, signature.baseAddress ?? empty, signature.count,
                                             message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty,
                                             message.count)
            }
        }
        // A failed check leaves reasons on this thread's error queue, where the TLS code would read them later.
        if result != 1 { api.pointee.ERR_clear_error() }
        return result == 1
    }
}
