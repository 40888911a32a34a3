/// The few DER (X.690) structures the token keys need, built in Swift so that libcrypto only ever parses one
/// format (SubjectPublicKeyInfo) and checks one signature encoding.
enum DER {
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(truncatingIfNeeded: rest), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    static func sequence(_ parts: [UInt8]...) -> [UInt8] {
        element(0x30, parts.flatMap { $0 })
    }

    /// A non-negative INTEGER from big-endian magnitude bytes: leading zeros dropped, one 0x00 added when the
    /// high bit is set (else it would read as negative).
    static func unsignedInteger(_ magnitude: some Collection<UInt8>) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return element(0x02, bytes)
    }

    static func bitString(_ bytes: [UInt8]) -> [UInt8] {
        element(0x03, [0] + bytes)
    }

    static let null: [UInt8] = [0x05, 0x00]
    /// 1.2.840.113549.1.1.1, rsaEncryption.
    static let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    /// 1.2.840.10045.2.1, id-ecPublicKey.
    static let ecPublicKey: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    /// 1.2.840.10045.3.1.7, prime256v1 (P-256).
    static let prime256v1: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    /// SubjectPublicKeyInfo (RFC 5280) of an RSA key from its modulus and exponent (a JWK's `n` and `e`).
    static func rsaPublicKey(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        rsaPublicKey(pkcs1: sequence(unsignedInteger(modulus), unsignedInteger(exponent)))
    }

    /// SubjectPublicKeyInfo around a PKCS#1 RSAPublicKey (a PEM `RSA PUBLIC KEY` block's content).
    static func rsaPublicKey(pkcs1: [UInt8]) -> [UInt8] {
        sequence(sequence(rsaEncryption, null), bitString(pkcs1))
    }

    /// SubjectPublicKeyInfo (RFC 5480) of a P-256 point from its coordinates (a JWK's `x` and `y`, 32 bytes
    /// each), uncompressed. libcrypto checks that the point is on the curve when it reads it.
    static func p256PublicKey(x: [UInt8], y: [UInt8]) -> [UInt8] {
        sequence(sequence(ecPublicKey, prime256v1), bitString([0x04] + x + y))
    }

    /// The DER ECDSA-Sig-Value (SEQUENCE of r and s) that libcrypto checks, from JWS's fixed-width R || S
    /// (RFC 7518 §3.4: 32 bytes each for ES256).
    static func ecdsaSignature(raw: [UInt8]) -> [UInt8] {
        let half = raw.count / 2
        return sequence(unsignedInteger(raw[..<half]), unsignedInteger(raw[half...]))
    }
}
