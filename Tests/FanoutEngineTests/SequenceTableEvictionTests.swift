@testable import FanoutEngine
import Testing

@Suite("SequenceTable eviction")
struct SequenceTableEvictionTests {
    /// A full million-subject table takes 1,000 more subjects, each evicting one with a bounded look: the
    /// least recent unsubscribed subjects go, subscribed and recent ones keep their numbers.
    @Test func aFullMillionEvictsInConstantSteps() {
        let limit = 1_000_000
        var table = SequenceTable(limit: limit)
        let subjects = (0..<limit).map { "s.\($0)" }
        // Every tenth subject has a subscriber, among them the least recent one.
        let subscribed = { (subject: String) in subject.utf8.last == UInt8(ascii: "0") }
        for subject in subjects {
            table.store(1, for: subject) { _ in
                Issue.record("a table below its limit asks nothing")
                return true
            }
        }
        #expect(table.count == limit)

        var asked = 0
        for number in 0..<1_000 {
            var askedNow = 0
            let (last, slot) = table.find("new.\(number)")
            #expect(last == 0)
            table.store(1, for: "new.\(number)", at: slot) { subject in
                askedNow += 1
                return subscribed(subject)
            }
            #expect(askedNow <= SequenceTable.candidatesLooked)
            asked += askedNow
            #expect(table.count == limit)
        }
        // The oldest 1,000 unsubscribed subjects went: s.1 ... s.9, s.11 ... s.19, ..., s.1111; each tenth
        // one (s.0 ... s.1110) was asked about, found subscribed, and moved to the recent end.
        #expect(asked == 1_000 + 112)
        for number in 0..<1_112 {
            let kept = table.find("s.\(number)").last == 1
            #expect(kept == (number % 10 == 0), "s.\(number)")
        }
        #expect(table.find("s.1112").last == 1, "the next unsubscribed one is still there")
        #expect(table.find("s.999999").last == 1, "recent subjects are kept")
        #expect((0..<1_000).allSatisfy { table.find("new.\($0)").last == 1 })
    }

    @Test func neverRenumbersASubscribedSubject() {
        var table = SequenceTable(limit: 100)
        for number in 0..<100 { table.store(5, for: "s\(number)") { _ in true } }
        var asked: [String] = []
        table.store(1, for: "new") { subject in
            asked.append(subject)
            return true
        }
        #expect(asked == (0..<8).map { "s\($0)" }, "the eight least recent, and no more")
        #expect((0..<100).allSatisfy { table.find("s\($0)").last == 5 }, "every subscribed subject keeps its number")
        #expect(table.count == 101, "the table grew past its limit rather than renumber one under its subscribers")
        // Once one of the least recent has no subscriber, the table evicts again.
        table.store(1, for: "newer") { $0 != "s8" }
        #expect(table.find("s8").last == 0, "s8, unsubscribed, went")
        #expect(table.count == 101)
        #expect((0..<8).allSatisfy { table.find("s\($0)").last == 5 }, "the ones looked at moved to the recent end")
    }

    @Test func publishingMakesASubjectRecent() {
        var table = SequenceTable(limit: 3)
        for subject in ["a", "b", "c"] { table.store(1, for: subject) { _ in false } }
        let (last, slot) = table.find("a")
        table.store(last + 1, for: "a", at: slot) { _ in false }
        table.store(1, for: "d") { _ in false }
        #expect(table.find("a").last == 2)
        #expect(table.find("b").last == 0, "b is now the least recently published")
        #expect(table.find("c").last == 1)
    }

    @Test func aStaleSlotCostsALookupNotAWrongSubject() {
        var table = SequenceTable(limit: 2)
        table.store(4, for: "a") { _ in false }
        let (_, slotOfA) = table.find("a")
        let (_, absentSlot) = table.find("b")
        table.store(1, for: "b") { _ in false }
        table.store(1, for: "c") { _ in false }  // evicts "a"; "c" takes its place in the array
        table.store(9, for: "a", at: slotOfA) { _ in false }
        #expect(table.find("a").last == 9)
        #expect(table.find("c").last == 1, "c kept its number")
        table.store(2, for: "b", at: absentSlot) { _ in false }
        #expect(table.count == 2)
    }

    @Test func aLoweredLimitIsReachedOneStoreAtATime() {
        var table = SequenceTable(limit: 10)
        for number in 0..<10 { table.store(1, for: "s\(number)") { _ in false } }
        table.limit = 4
        var counts: [Int] = []
        for number in 0..<8 {
            table.store(1, for: "new\(number)") { _ in false }
            counts.append(table.count)
        }
        #expect(counts == [9, 8, 7, 6, 5, 4, 4, 4])
        #expect((4..<8).allSatisfy { table.find("new\($0)").last == 1 }, "the newest are kept")
    }

    @Test func subscribedSubjectsGrowTheTableToTwiceItsLimitAtMost() {
        var table = SequenceTable(limit: 50)
        for number in 0..<500 { table.store(1, for: "s\(number)") { _ in true } }
        #expect(table.count == 100)
        #expect(table.find("s499").last == 1, "the newest is kept")
    }
}
