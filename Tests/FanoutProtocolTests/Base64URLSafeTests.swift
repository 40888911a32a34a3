import FanoutProtocol
import FanoutTestSupport
import Testing

@Suite struct Base64URLSafeTests {
    @Test func decodesWhatItEncodes() {
        var random = SeededGenerator(seed: 7)
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect(Base64.decodeURLSafe(Base64.encodeURLSafe(bytes)) == bytes)
        }
        #expect(Base64.decodeURLSafe("-_8") == [0xFB, 0xFF])
        #expect(Base64.decodeURLSafe("") == [])
    }

    @Test func refusesAnythingButCanonicalUnpaddedBase64url() {
        #expect(Base64.decodeURLSafe("Zg==") == nil)   // padding
        #expect(Base64.decodeURLSafe("+/8") == nil)    // the standard alphabet
        #expect(Base64.decodeURLSafe("Zm 8") == nil)   // whitespace
        #expect(Base64.decodeURLSafe("Zm9vY") == nil)  // a length of 1 mod 4 carries no whole byte
        // "Zg" is "f"; "Zh" has the same first byte with spare bits set: two texts for one byte would let a
        // token's signature be changed without changing it.
        #expect(Base64.decodeURLSafe("Zg") == Array("f".utf8))
        #expect(Base64.decodeURLSafe("Zh") == nil)
        #expect(Base64.decodeURLSafe("Zm8") == Array("fo".utf8))
        #expect(Base64.decodeURLSafe("Zm9") == nil)
    }

    @Test func tellsItsDigits() {
        let digits = (0...255).map(UInt8.init).filter(Base64.isURLSafeDigit)
        #expect(String(decoding: digits, as: UTF8.self)
            == "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
    }
}
