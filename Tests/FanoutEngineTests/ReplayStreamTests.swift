@testable import FanoutEngine
import FanoutProtocol
import Testing

/// Replays are encoded a slice at a time, and send exactly what their reply announced even when the messages
/// leave the history (eviction, a reload, a restarted numbering) before their slice is encoded.
@Suite("Replay streams")
struct ReplayStreamTests {
    private func engine(keeping maxMessages: Int, maxBytes: Int = 1 << 30) -> MemoryEngine {
        MemoryEngine(subjectLimit: 1000, history: [HistoryRule(subjects: "h.>", maxMessages: maxMessages, maxAge: nil)],
                     historyMaxBytes: maxBytes, epoch: "e")
    }

    private func publish(_ engine: MemoryEngine, _ subject: String, _ seqs: ClosedRange<UInt64>, size: Int = 10) {
        for seq in seqs {
            let payload = Array("p\(seq)".utf8) + Array(repeating: UInt8(ascii: "x"), count: size)
            precondition(engine.publish(subject, payload) == seq)
        }
        engine.endOfRead()
    }

    private func line(_ subject: String, _ seq: UInt64, size: Int = 10) -> String {
        "MSG \(subject) \(seq) p\(seq)\(String(repeating: "x", count: size))\n"
    }

    private func answer(_ engine: MemoryEngine, _ kind: ReplayRequest.Kind, subject: String = "h.a",
                        budget: Int = 1 << 30) -> ReplayAnswer {
        var result: ReplayAnswer?
        engine.replay(ReplayRequest(subject: subject, kind: kind, budget: budget)) { result = try? $0.get().answer }
        return result!
    }

    /// Encodes the rest of a stream in slices of `limit`, checking that every slice but the last reaches it.
    private func drain(_ stream: ReplayStream, limit: Int) -> String {
        var all: [UInt8] = []
        while true {
            var slice: [UInt8] = []
            let more = stream.encode(into: &slice, limit: limit)
            all += slice
            if !more { break }
            #expect(slice.count >= limit, "a slice ends early only when the replay does")
            #expect(slice.count < limit + 200, "a slice stops at the first message past its limit")
        }
        stream.finish()
        return String(decoding: all, as: UTF8.self)
    }

    @Test func aReplayIsEncodedInSlicesOfItsLimitAndAnnouncesItsSize() {
        let engine = engine(keeping: 10_000)
        publish(engine, "h.a", 1...5000)
        let reply = answer(engine, .after(epoch: "e", seq: 1000))
        #expect(reply.replayed == 4000)
        #expect(reply.missed == 0)
        let stream = try! #require(reply.stream)
        let text = drain(stream, limit: 4096)
        #expect(text == (1001...5000).map { line("h.a", $0) }.joined())
        #expect(text.utf8.count == reply.bytes, "the announced size is exact")
    }

    @Test func theBudgetKeepsTheNewestThatFitExactly() {
        let engine = engine(keeping: 10_000)
        publish(engine, "h.a", 1...2000)
        let sizes = (1...2000).map { line("h.a", UInt64($0)).utf8.count }
        for budget in [0, 1, 20, 21, 22, 500, 9_999, 10_000, 31_337, 1 << 30] {
            // By hand: how many of the newest fit.
            var fitting = 0, used = 0
            for size in sizes.reversed() {
                guard used + size <= budget else { break }
                used += size
                fitting += 1
            }
            let reply = answer(engine, .after(epoch: "e", seq: 0), budget: budget)
            #expect(reply.replayed == fitting, "budget \(budget)")
            #expect(reply.bytes == used, "budget \(budget)")
            #expect(reply.missed == UInt64(2000 - fitting))
            if let stream = reply.stream { #expect(drain(stream, limit: 1 << 20).utf8.count == used) }
        }
    }

    @Test func messagesEvictedBeforeTheirSliceAreStillSentOnce() {
        let engine = engine(keeping: 100)
        publish(engine, "h.a", 1...100)
        let reply = answer(engine, .after(epoch: "e", seq: 0))
        let stream = try! #require(reply.stream)
        var first: [UInt8] = []
        #expect(stream.encode(into: &first, limit: 200))
        let sent = String(decoding: first, as: UTF8.self).split(separator: "\n").count
        // 150 more push every one of the first 100 out of the history.
        publish(engine, "h.a", 101...250)
        #expect(engine.historyFigures.messages == 100)
        let rest = drain(stream, limit: 1000)
        #expect(String(decoding: first, as: UTF8.self) + rest == (1...100).map { line("h.a", $0) }.joined())
        #expect(sent < 100)
    }

    @Test func aReloadThatDropsTheHistoryMidReplayStillSendsWhatWasAnnounced() {
        let engine = engine(keeping: 1000)
        publish(engine, "h.a", 1...300)
        let reply = answer(engine, .newest(count: 250))
        let stream = try! #require(reply.stream)
        var first: [UInt8] = []
        _ = stream.encode(into: &first, limit: 100)
        engine.applyHistory(rules: [], maxBytes: 1 << 30)
        #expect(engine.historyFigures.messages == 0)
        let text = String(decoding: first, as: UTF8.self) + drain(stream, limit: 500)
        #expect(text == (51...300).map { line("h.a", $0) }.joined())
    }

    @Test func aRestartedNumberingMidReplayStillSendsTheOldOnesOnly() {
        let engine = engine(keeping: 1000)
        publish(engine, "h.a", 1...200)
        let reply = answer(engine, .after(epoch: "e", seq: 100))
        let stream = try! #require(reply.stream)
        var first: [UInt8] = []
        _ = stream.encode(into: &first, limit: 300)
        // The numbering restarts (seq 1 again) while the replay is under way: the log is emptied at once.
        let (_, position) = engine.openPosition(subject: "h.a")
        Array("new".utf8).withUnsafeBytes { payload in
            Array("h.a".utf8).withUnsafeBytes { engine.retain(position, subject: $0, seq: 1, payload: payload) }
        }
        let text = String(decoding: first, as: UTF8.self) + drain(stream, limit: 500)
        #expect(text == (101...200).map { line("h.a", $0) }.joined(), "only what the reply announced, nothing of the new numbering")
    }

    @Test func aFinishedReplayLetsGoOfItsSubject() {
        let engine = engine(keeping: 1000)
        publish(engine, "h.a", 1...10)
        let unfinished = try! #require(answer(engine, .newest(count: 5)).stream)
        let finished = try! #require(answer(engine, .newest(count: 3)).stream)
        _ = drain(finished, limit: 1000)
        unfinished.finish()
        #expect(engine.activeReplayCursors(of: "h.a") == 0)
    }

    @Test func theByteBoundEvictsUnderAReplayWithoutLosingIt() {
        // Room for about 60 messages in all: another subject's traffic pushes h.a's out.
        let engine = engine(keeping: 1000, maxBytes: 60 * (HistoryStore.overheadPerMessage + 15))
        publish(engine, "h.a", 1...50)
        let reply = answer(engine, .after(epoch: "e", seq: 10))
        #expect(reply.replayed == 40)
        let stream = try! #require(reply.stream)
        publish(engine, "h.b", 1...100)
        #expect(drain(stream, limit: 64) == (11...50).map { line("h.a", $0) }.joined())
        #expect(engine.historyFigures.evicted > 0)
    }

    @Test func digitTotalsMatchCounting() {
        var generator = SystemRandomNumberGenerator()
        let edges: [UInt64] = [1, 9, 10, 11, 99, 100, 101, 999, 1000, 9_999_999, 10_000_000, 123_456_789]
        for first in edges {
            for last in edges where last >= first && last - first < 100_000 {
                let counted = (first...last).reduce(0) { $0 + String($1).count }
                #expect(DecimalDigits.total(from: first, through: last) == counted, "\(first)...\(last)")
            }
        }
        for _ in 0..<200 {
            let first = UInt64.random(in: 0...5_000_000, using: &generator)
            let last = first + UInt64.random(in: 0...5_000, using: &generator)
            #expect(DecimalDigits.total(from: first, through: last) == (first...last).reduce(0) { $0 + String($1).count })
        }
        #expect(DecimalDigits.total(from: UInt64.max - 2, through: UInt64.max) == 60)
        #expect(DecimalDigits.total(from: 5, through: 4) == 0)
    }
}
