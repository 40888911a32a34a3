import FanoutEngine
import FanoutRedis
@testable import FanoutRedisEngine
import Testing

/// Where subjects live in Redis and how wildcards are folded, without a server.
struct SubjectKeysTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func wildcardsFoldIntoOneGlobPerFirstToken() {
        #expect(text(SubjectKeys.glob(of: "orders.*.eu").glob) == "fanout:m:orders.*")
        #expect(text(SubjectKeys.glob(of: "orders.>").glob) == "fanout:m:orders.*")
        #expect(text(SubjectKeys.glob(of: "orders.>").prefix) == "fanout:m:orders.")
        #expect(text(SubjectKeys.glob(of: "*.eu").glob) == "fanout:m:*")
        #expect(text(SubjectKeys.glob(of: ">").glob) == "fanout:m:*")
        #expect(text(SubjectKeys.glob(of: ">").prefix) == "fanout:m:")
    }

    @Test func globCharactersInALiteralTokenAreEscapedAndUnescapedBack() {
        let folded = SubjectKeys.glob(of: "a[1]?\\x.*")
        #expect(text(folded.glob) == "fanout:m:a\\[1\\]\\?\\\\x.*")
        #expect(SubjectKeys.prefix(ofGlob: folded.glob) == folded.prefix)
        #expect(text(folded.prefix) == "fanout:m:a[1]?\\x.")
    }

    @Test func aSubjectsShardIsStableAndSpread() {
        #expect(SubjectKeys.shard(of: "anything", count: 1) == 0)
        var counts = [0, 0, 0]
        for index in 0..<3000 { counts[SubjectKeys.shard(of: "s.\(index)", count: 3)] += 1 }
        #expect(counts.allSatisfy { $0 > 800 })
        #expect(SubjectKeys.shard(of: "orders.eu", count: 7) == SubjectKeys.shard(of: "orders.eu", count: 7))
        #expect(SubjectKeys.keys(of: "a.b") == ["fanout:{a.b}:seq", "fanout:{a.b}:log", "fanout:epoch", "fanout:numberings"])
        var encoded: [UInt8] = []
        Array("a.b".utf8).withUnsafeBytes { SubjectKeys.appendSubjectKeys(of: $0, to: &encoded) }
        encoded += SubjectKeys.shardKeysEncoded
        #expect(text(encoded) == "$16\r\nfanout:{a.b}:seq\r\n$16\r\nfanout:{a.b}:log\r\n$12\r\nfanout:epoch\r\n$17\r\nfanout:numberings\r\n")
        #expect(SubjectKeys.subject(ofChannel: SubjectKeys.channel(of: "a.b")) == "a.b")
        #expect(SubjectKeys.subject(ofChannel: Array("other".utf8)) == nil)
    }

    @Test func publishedMessagesParse() {
        let bytes = Array("ep.3 42 hello world".utf8)
        let parsed = RedisEngine.parseHead(bytes)
        #expect(parsed?.0 == "ep.3" && parsed?.1 == 42 && parsed.map { text(Array(bytes[$0.2...])) } == "hello world")
        #expect(RedisEngine.parseHead(Array("ep.3 42 ".utf8))?.2 == 8)
        #expect(RedisEngine.parseHead(Array("ep 4x2 a".utf8)) == nil)
        #expect(RedisEngine.parseHead(Array("nospace".utf8)) == nil)
        // The framed form, for payloads that hold an LF.
        let framed = Array("ep.3 7b 3,0,2\na\nbxy".utf8)
        let head = RedisEngine.parseHead(framed)
        #expect(head?.1 == 7 && head?.3 == [3, 0, 2] && head.map { text(Array(framed[$0.2...])) } == "a\nbxy")
        #expect(RedisEngine.parseHead(Array("ep 7b 3,x\nabc".utf8)) == nil)
    }

    /// The whole replay's lines.
    private func encoded(_ answer: ReplayAnswer) -> [UInt8] {
        var bytes: [UInt8] = []
        _ = answer.stream?.encode(into: &bytes, limit: .max)
        return bytes
    }

    @Test func aReplayFitsTheBudgetAndCountsWhatItLeavesOut() {
        // The script's answer: epoch, last seq, then seq/payload pairs (5 and older are gone from the stream).
        let parts: [FanoutRedis.RedisReply] = [.string(Array("e.1".utf8)), .integer(10)]
            + (6...10).flatMap { [FanoutRedis.RedisReply.integer(Int64($0)), .string(Array("m\($0)".utf8))] }
        let full = RedisEngine.answer(ReplayRequest(subject: "s", kind: .after(epoch: "e.1", seq: 2), budget: 1 << 20),
                                      parts: parts)
        #expect(full.replayed == 5 && full.missed == 3 && full.lastSeq == 10 && full.epoch == "e.1")
        #expect(text(encoded(full)).hasPrefix("MSG s 6 m6\n"))
        // Room for the newest two lines (13 and 11 bytes): the newest two, the three older ones counted as missed too.
        let cut = RedisEngine.answer(ReplayRequest(subject: "s", kind: .after(epoch: "e.1", seq: 2), budget: 24),
                                     parts: parts)
        #expect(cut.replayed == 2 && cut.missed == 6)
        #expect(cut.bytes == 24 && text(encoded(cut)) == "MSG s 9 m9\nMSG s 10 m10\n")
        let otherEpoch = RedisEngine.answer(ReplayRequest(subject: "s", kind: .after(epoch: "old", seq: 2), budget: 1 << 20),
                                            parts: parts)
        #expect(otherEpoch.missed == nil && otherEpoch.replayed == 5)
        let last = RedisEngine.answer(ReplayRequest(subject: "s", kind: .newest(count: 5), budget: 1 << 20), parts: parts)
        #expect(last.missed == 0 && last.replayed == 5)
        // Nothing retained after the position: all of it missed.
        let gone = RedisEngine.answer(ReplayRequest(subject: "s", kind: .after(epoch: "e.1", seq: 2), budget: 1 << 20),
                                      parts: Array(parts.prefix(2)))
        #expect(gone.missed == 8 && gone.replayed == 0 && gone.stream == nil)
    }
}
