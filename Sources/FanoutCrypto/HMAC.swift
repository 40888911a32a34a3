internal import CCrypto

/// HMAC (RFC 2104) over SHA-2, and the comparison its results need.
public enum HMAC {
    /// The HMAC of `message` under `key`. Throws only when libcrypto is unavailable or fails.
    public static func authenticate(_ digest: SHA2, key: [UInt8], message: UnsafeRawBufferPointer)
        throws(CryptoError) -> [UInt8]
    {
        let api = try libcrypto()
        guard key.count <= Int(Int32.max) else { throw CryptoError("HMAC key over 2 GiB") }
        var out = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        let done = key.withUnsafeBytes { key in
            out.withUnsafeMutableBufferPointer { out in
                // A zero-length key still needs a non-NULL pointer for some libcrypto builds.
                var empty: UInt8 = 0
                return withUnsafePointer(to: &empty) { empty in
                    api.pointee.HMAC(digest.md(api), key.baseAddress ?? UnsafeRawPointer(empty), Int32(key.count),
                                     message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, message.count,
                                     out.baseAddress, &length) != nil
                }
            }
        }
        guard done, Int(length) == digest.length else {
            api.pointee.ERR_clear_error()
            throw CryptoError("HMAC failed in libcrypto")
        }
        out.removeLast(64 - Int(length))
        return out
    }

    /// Whether `a` and `b` are equal, in time that depends on their lengths only (CRYPTO_memcmp): a MAC
    /// compared byte by byte with an early exit tells an attacker how many leading bytes were right.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) throws(CryptoError) -> Bool {
        let api = try libcrypto()
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in api.pointee.CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}
