@testable import FanoutServer
import Testing

@Suite("SubscriptionSet")
struct SubscriptionSetTests {
    /// The connection's layout counts on 17 bytes (a string and its case), after which its read gate fits.
    @Test func aSetTakes17Bytes() {
        #expect(MemoryLayout<SubscriptionSet>.size == 17)
    }

    @Test func behavesAsASetThroughEveryForm() {
        var set = SubscriptionSet()
        #expect(set.isEmpty && Array(set).isEmpty)
        #expect(set.insert("a").inserted)
        #expect(!set.insert("a").inserted, "no duplicates while holding one pattern")
        #expect(set.count == 1 && set.contains("a") && !set.contains("b"))
        #expect(set.insert("b").inserted)
        #expect(!set.insert("b").inserted, "no duplicates while holding several")
        set.insert("c")
        #expect(set.count == 3 && Set(set) == ["a", "b", "c"])
        #expect(set.remove("b") == "b")
        #expect(set.remove("b") == nil)
        #expect(set.remove("a") == "a")
        #expect(set.count == 1 && Array(set) == ["c"], "one pattern left")
        #expect(set.insert("d").inserted && Set(set) == ["c", "d"])
        set.removeAll()
        #expect(set.isEmpty && !set.contains("c"))
    }

    @Test func holdsThousandsOfPatterns() {
        var set = SubscriptionSet()
        for index in 0..<5000 { set.insert("subject.\(index)") }
        #expect(set.count == 5000)
        #expect(set.contains("subject.4999"))
        for index in stride(from: 0, to: 5000, by: 2) { set.remove("subject.\(index)") }
        #expect(set.count == 2500 && !set.contains("subject.0") && set.contains("subject.1"))
        #expect(set.filter { $0.hasSuffix("1") }.count == 500)
    }
}
