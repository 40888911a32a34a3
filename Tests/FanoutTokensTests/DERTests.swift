@testable import FanoutTokens
import Testing

/// The DER that libcrypto is given for JWK keys and ES256 signatures.
@Suite struct DERTests {
    @Test func integersAreMinimalAndNonNegative() {
        #expect(DER.unsignedInteger([0x00, 0x00, 0x7F]) == [0x02, 0x01, 0x7F])
        #expect(DER.unsignedInteger([0x80]) == [0x02, 0x02, 0x00, 0x80])
        #expect(DER.unsignedInteger([0x00, 0x00]) == [0x02, 0x01, 0x00])
        #expect(DER.unsignedInteger([]) == [0x02, 0x01, 0x00])
    }

    @Test func lengthsOver127TakeTheLongForm() {
        #expect(DER.length(127) == [0x7F])
        #expect(DER.length(128) == [0x81, 0x80])
        #expect(DER.length(256) == [0x82, 0x01, 0x00])
    }

    @Test func anES256SignatureBecomesASequenceOfTwoIntegers() {
        // R with leading zero bytes (1 in 256 signatures has one), S with its high bit set.
        let r = [UInt8](repeating: 0, count: 2) + [UInt8](repeating: 0x11, count: 30)
        let s = [UInt8](repeating: 0xFF, count: 32)
        let der = DER.ecdsaSignature(raw: r + s)
        #expect(der == [0x30, 67, 0x02, 30] + [UInt8](repeating: 0x11, count: 30) + [0x02, 33, 0x00] + s)
    }

    @Test func aP256KeyIsAnUncompressedPointUnderItsCurve() {
        let x = [UInt8](repeating: 1, count: 32), y = [UInt8](repeating: 2, count: 32)
        let der = DER.p256PublicKey(x: x, y: y)
        #expect(der.count == 91)  // the fixed size of every P-256 SubjectPublicKeyInfo
        #expect(Array(der.suffix(66)) == [0x00, 0x04] + x + y)
        #expect(der.starts(with: [0x30, 0x59, 0x30, 0x13]))
    }
}
