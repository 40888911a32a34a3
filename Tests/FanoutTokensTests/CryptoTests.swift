import FanoutCrypto
import FanoutProtocol
import Testing

/// FanoutCrypto on its own: known HMAC values and public keys read from DER.
@Suite struct CryptoTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func hmacMatchesRFC4231() throws {
        // RFC 4231 §4.3, test case 2.
        let message = Array("what do ya want for nothing?".utf8)
        let expected: [(SHA2, String)] = [
            (.sha256, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (.sha384, "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47"
                + "e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649"),
            (.sha512, "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
                + "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"),
        ]
        for (digest, value) in expected {
            let key = Array("Jefe".utf8)
            let mac = try message.withUnsafeBytes { try HMAC.authenticate(digest, key: key, message: $0) }
            #expect(mac.count == digest.length)
            #expect(hex(mac) == value)
        }
    }

    @Test func constantTimeEqualComparesWholeValues() throws {
        #expect(try HMAC.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(try !HMAC.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(try !HMAC.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(try HMAC.constantTimeEqual([], []))
    }

    @Test func publicKeysSayTheirKind() throws {
        let der = { (pem: String) in
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            return Base64.decode(body)!
        }
        #expect(try PublicKey(der: der(Vectors.shared.rsa_public_pem)).kind == .rsa(bits: 2048))
        #expect(try PublicKey(der: der(Vectors.shared.ec_public_pem)).kind == .p256)
        #expect(throws: CryptoError.self) { try PublicKey(der: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: CryptoError.self) { try PublicKey(der: []) }
    }
}
