import FanoutProtocol
import Testing

@Suite("Text encodings")
struct EncodingTests {
    @Test func jsonEscapesQuotesBackslashesAndControlCharacters() {
        #expect(JSONText.quoted("") == #""""#)
        #expect(JSONText.quoted(#"say "hi" \ bye"#) == #""say \"hi\" \\ bye""#)
        #expect(JSONText.quoted("a\nb\rc\td") == #""a\nb\rc\td""#)
        #expect(JSONText.quoted("\u{00}\u{01}\u{08}\u{0C}\u{1B}\u{1F}") == #""\u0000\u0001\u0008\u000c\u001b\u001f""#)
    }

    @Test func jsonEscapesDeleteButNotWhatFollowsIt() {
        #expect(JSONText.quoted("x\u{7F}y") == #""x\u007fy""#)
        // The first printable and the non-ASCII characters go through as they are, '/' included.
        #expect(JSONText.quoted(" ~/") == #"" ~/""#)
        #expect(JSONText.quoted("\u{80}é→🙂") == "\"\u{80}é→🙂\"")
    }

    @Test func base64StandardIsPaddedAndURLSafeIsNot() {
        #expect(Base64.encode([]) == "")
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.encode(Array("foo".utf8)) == "Zm9v")
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
        #expect(Base64.encodeURLSafe([0xFB, 0xFF]) == "-_8")
        #expect(Base64.encodeURLSafe(Array("foob".utf8)) == "Zm9vYg")
        let bytes = (0..<256).map { UInt8($0) }
        #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        let urlSafe = Base64.encode(bytes).compactMap { digit -> Character? in
            digit == "+" ? "-" : digit == "/" ? "_" : digit == "=" ? nil : digit
        }
        #expect(Base64.encodeURLSafe(bytes) == String(urlSafe))
    }

    @Test func base64DecodesOnlyPaddedStandardText() {
        #expect(Base64.encode(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw==")
        #expect(Base64.encode(Array("any carnal pleasu".utf8)) == "YW55IGNhcm5hbCBwbGVhc3U=")
        #expect(Base64.decode("YW55IGNhcm5hbCBwbGVhcw==") == Array("any carnal pleas".utf8))
        #expect(Base64.decode("YW5=IGNh") == nil)
        #expect(Base64.decode("abc") == nil)
    }
}
