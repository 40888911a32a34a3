@testable import FanoutEngine
import Testing

@Suite("SequenceTable")
struct SequenceTableTests {
    @Test func remembersPerSubjectAndStaysBounded() {
        var table = SequenceTable(limit: 4)
        table.store(5, for: "kept", isSubscribed: { _ in true })
        for number in 0..<100 {
            table.store(1, for: "s\(number)", isSubscribed: { $0 == "kept" })
            #expect(table.count <= 4)
        }
        #expect(table.find("kept").last == 5, "subscribed subjects keep their numbers")
        #expect(table.find("never").last == 0)
    }

    @Test func storesAtTheSlotItsLookupFound() {
        var table = SequenceTable(limit: 4)
        let (first, absent) = table.find("a")
        #expect(first == 0)
        table.store(3, for: "a", at: absent, isSubscribed: { _ in true })
        let (known, slot) = table.find("a")
        #expect(known == 3)
        table.store(7, for: "a", at: slot, isSubscribed: { _ in true })
        #expect(table.find("a").last == 7)
        #expect(table.count == 1)
        for number in 0..<10 {
            let (_, slot) = table.find("s\(number)")
            table.store(1, for: "s\(number)", at: slot, isSubscribed: { $0 == "a" })
            #expect(table.count <= 4, "new subjects stored at an empty slot still respect the limit")
        }
        #expect(table.find("a").last == 7)
    }
}
