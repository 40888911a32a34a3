import FanoutTestSupport
import FanoutSubjects
import Testing

@Suite("PatternListing")
struct PatternListingTests {
    @Test func aListingKeepsTheSmallestInOrder() {
        var generator = SeededGenerator(seed: 3)
        let names = (0..<5_000).map { _ in "n\(generator.next() % 100_000)" }
        var listing = PatternListing(limit: 100)
        for (number, name) in names.enumerated() { listing.add(name, subscribers: number) }
        #expect(listing.total == names.count)
        #expect(listing.entries.map(\.pattern) == Array(names.sorted().prefix(100)))
        var none = PatternListing(limit: 0)
        none.add("a", subscribers: 1)
        #expect(none.total == 1 && none.entries.isEmpty)
    }

    @Test func aListingSortsWhatItKeeps() {
        var listing = PatternListing(limit: 3)
        for (pattern, subscribers) in [("b", 1), ("d", 2), ("a", 3), ("c", 4), ("e", 5)] {
            listing.add(pattern, subscribers: subscribers)
        }
        #expect(listing.entries.map(\.pattern) == ["a", "b", "c"])
        #expect(listing.entries.map(\.subscribers) == [3, 1, 4])
        #expect(listing.total == 5)
    }
}
