@testable import FanoutEngine
import Testing

/// The history store's worst cases, as its declaration states them: no call removes or frees more than its
/// bound, however many messages expire or are dropped at once; what is left is done by later steps.
@Suite("History store bounds")
struct HistoryBoundsTests {
    private let start = ContinuousClock.now

    private func store(maxAge: Duration? = .seconds(1)) -> HistoryStore {
        HistoryStore(rules: [HistoryRule(subjects: "h.>", maxMessages: 1_000_000, maxAge: maxAge)], maxBytes: 1 << 40)
    }

    private func fill(_ store: HistoryStore, _ subject: String, count: Int, at instant: ContinuousClock.Instant) {
        let log = store.logForAppending(subject)!
        let first = (log.messages.last?.seq ?? 0) + 1
        for seq in first..<(first + UInt64(count)) {
            _ = [UInt8](repeating: 1, count: 10).withUnsafeBytes { store.append(log, seq: seq, payload: $0, at: instant) }
        }
    }

    @Test func aBurstExpiringAtOnceIsRemovedInBoundedSteps() {
        let store = store()
        fill(store, "h.a", count: 10_000, at: start)
        let later = start + .seconds(2)
        var steps = 0
        var before = store.count
        while store.expireStep(budget: 1024, at: later) {
            #expect(before - store.count <= HistoryStore.removalsPerStep)
            before = store.count
            steps += 1
            if steps > 10 { break }
        }
        #expect(store.count == 0)
        #expect(steps == 10_000 / HistoryStore.removalsPerStep, "each step but the last stopped at its bound")
    }

    @Test func anAppendRemovesFewExpiredMessages() {
        let store = store()
        fill(store, "h.a", count: 1000, at: start)
        fill(store, "h.a", count: 1, at: start + .seconds(2))
        #expect(store.count == 1001 - HistoryStore.removalsPerAppend)
        // Expired messages still waiting are not retained for a replay.
        let log = store.log(of: "h.a")!
        #expect(store.firstUnexpired(in: log, at: start + .seconds(2)) == log.messages.count - 1)
        #expect(store.firstUnexpired(in: log, at: start) == 0)
    }

    @Test func aDroppedSubjectIsFreedInBoundedSteps() {
        let store = store(maxAge: nil)
        fill(store, "h.a", count: 10_000, at: start)
        store.drop("h.a")
        #expect(store.count == 0 && store.bytes == 0 && store.subjectCount == 0, "accounted as gone at once")
        #expect(store.hasDroppedMessages)
        var steps = 0
        while store.expireStep(budget: 1024, at: start) { steps += 1 }
        #expect(steps == 10_000 / HistoryStore.removalsPerStep)
        #expect(!store.hasDroppedMessages)
    }

    @Test func aRestartedNumberingEmptiesTheLogAtOnce() {
        let store = store(maxAge: nil)
        fill(store, "h.a", count: 5000, at: start)
        let log = store.log(of: "h.a")!
        // Seq 1 again: the numbering restarted, and the earlier messages belong to another epoch.
        _ = [UInt8](repeating: 2, count: 10).withUnsafeBytes { store.append(log, seq: 1, payload: $0, at: start) }
        #expect(store.count == 1)
        #expect(log.firstSeq == 1)
        #expect(store.hasDroppedMessages)
    }
}
