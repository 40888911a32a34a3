import FanoutTestSupport
@testable import FanoutSubjects
import Testing

private final class Member: Subscriber {
    var deliveryMark: UInt64 = 0
}

/// `p.0000042`: fixed width, so that name order is number order.
private func name(_ number: Int) -> String {
    let digits = String(number)
    return "p." + String(repeating: "0", count: 7 - digits.count) + digits
}

/// How many patterns the slice tests store: a million in a release build (`swift test -c release`). A debug
/// build spends about 9 µs per SUB and 3 µs per swept pattern in unspecialised generic code (27 s for the sweep
/// test at a million), so there they use the largest size that stays within a few seconds.
#if DEBUG
private let patternCount = 150_000
#else
private let patternCount = 1_000_000
#endif

/// `patternCount` single-member patterns `p.0000000` ... in shuffled order, spread over 1,000 members; the
/// members whose number is odd are returned dead.
private func manyPatterns() -> (SubjectIndex<Member>, live: [Member], isLive: (Int) -> Bool) {
    let count = patternCount, memberCount = 1_000
    let index = SubjectIndex<Member>()
    var members = (0..<memberCount).map { _ in Member() }
    var numbers = Array(0..<count)
    var generator = SeededGenerator(seed: 42)
    numbers.shuffle(using: &generator)
    for number in numbers { index.subscribe(members[number % memberCount], to: name(number)) }
    members = members.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)  // the rest die here
    return (index, members, { $0 % memberCount % 2 == 0 })
}

@Suite("SubjectIndex upkeep")
struct SubjectIndexUpkeepTests {
    @Test func aSweepInSlicesRemovesExactlyTheDeadPatterns() {
        let (index, live, isLive) = manyPatterns()
        let budget = 4_096
        var steps = 1
        while !index.sweepStep(budget: budget) { steps += 1 }
        #expect(steps == (patternCount + budget - 1) / budget, "one step per budget's worth of patterns")
        #expect(index.storedPatternCount == patternCount / 2)
        #expect(index.list.elements.allSatisfy { $0.set.storedCount == 1 }, "no dead member is left")
        for number in stride(from: 0, to: patternCount, by: 997) {
            #expect((index.liveSubscribers(ofPattern: name(number)) == 1) == isLive(number), "\(name(number))")
        }
        #expect(index.sweepStep(budget: .max), "the next cycle finds nothing more to do")
        #expect(index.storedPatternCount == patternCount / 2)
        withExtendedLifetime(live) {}
    }

    @Test func aListingInSlicesCountsAllAndKeepsTheFirstThousand() {
        let (index, live, isLive) = manyPatterns()
        // Permissions hide every pattern whose number ends in 7.
        let allowed = { (pattern: String) in pattern.utf8.last != UInt8(ascii: "7") }
        let cursor = index.makePatternCursor()
        var listing = PatternListing(limit: 1_000)
        var slices = 0
        var done = false
        while !done {
            done = index.scanPatterns(from: cursor, budget: patternCount / 20, where: allowed) { pattern, subscribers in
                listing.add(pattern, subscribers: subscribers)
            }
            slices += 1
        }
        let expected = (0..<patternCount).filter { isLive($0) && $0 % 10 != 7 }
        #expect(listing.total == expected.count)
        #expect(listing.entries.map(\.pattern) == expected.prefix(1_000).map(name))
        #expect(listing.entries.allSatisfy { $0.subscribers == 1 })
        #expect(slices >= 20, "the scan was spread over \(slices) calls")
        withExtendedLifetime(live) {}
    }

    /// The cursors' promise under churn: each scan offers every pattern stored throughout it exactly once,
    /// while patterns come and go between slices and a sweep runs alongside.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func scansMissAndRepeatNothingWhilePatternsComeAndGo(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let index = SubjectIndex<Member>()
        let member = Member()
        var stored = Set<String>()
        var next = 0
        func add() {
            let pattern = "x.\(next)"
            next += 1
            index.subscribe(member, to: pattern)
            stored.insert(pattern)
        }
        for _ in 0..<300 { add() }
        struct Scan {
            let cursor: PatternCursor
            let before: Set<String>
            var removedSince = Set<String>()
            var seen: [String] = []
        }
        var scans: [Scan] = []
        var finished = 0
        for _ in 0..<2_000 {
            switch generator.next() % 6 {
            case 0:
                if scans.count < 3 { scans.append(Scan(cursor: index.makePatternCursor(), before: stored)) }
            case 1, 2:
                if let victim = stored.randomElement(using: &generator) {
                    index.unsubscribe(member, from: victim)
                    stored.remove(victim)
                    for number in scans.indices { scans[number].removedSince.insert(victim) }
                }
            case 3:
                add()
            case 4:
                index.sweepStep(budget: Int(generator.next() % 20) + 1)
            default:
                guard !scans.isEmpty else { continue }
                let number = Int(generator.next() % UInt64(scans.count))
                var scan = scans[number]
                let done = index.scanPatterns(from: scan.cursor, budget: Int(generator.next() % 30) + 1,
                                              where: { _ in true }, { pattern, _ in scan.seen.append(pattern) })
                scans[number] = scan
                guard done else { continue }
                let throughout = scan.before.subtracting(scan.removedSince)
                #expect(Set(scan.seen).count == scan.seen.count, "no pattern is offered twice")
                #expect(throughout.isSubset(of: Set(scan.seen)), "missed: \(throughout.subtracting(scan.seen))")
                scans.remove(at: number)
                finished += 1
            }
        }
        #expect(finished > 10)
        #expect(index.storedPatternCount == stored.count)
    }

    @Test func anEmptiedPatternGoesAtOnceAndADeadOneAtTheSweep() {
        let index = SubjectIndex<Member>()
        let keeper = Member()
        index.subscribe(keeper, to: "a.b")
        index.subscribe(keeper, to: "a.*")
        index.unsubscribe(keeper, from: "a.*")
        #expect(index.storedPatternCount == 1, "the last member's UNSUB removes the pattern")
        #expect(index.trie.nodeCount == 1)
        do {
            let gone = Member()
            index.subscribe(gone, to: "c.>")
        }
        #expect(index.storedPatternCount == 2)
        #expect(!index.hasReceivers(for: "c.d"))
        index.sweepStep(budget: 1)
        index.sweepStep(budget: 1)
        #expect(index.storedPatternCount == 1)
        #expect(index.patterns.map(\.pattern) == ["a.b"])
        #expect(index.hasReceivers(for: "a.b"))
    }

    @Test func hasReceiversLooksPastDeadMembers() {
        let index = SubjectIndex<Member>()
        let keeper = Member()
        do {
            let dead = (0..<50).map { _ in Member() }
            for member in dead { index.subscribe(member, to: "a.*") }
        }
        #expect(!index.hasReceivers(for: "a.b"))
        index.subscribe(keeper, to: "a.*")
        #expect(index.hasReceivers(for: "a.b"))
        #expect(index.liveSubscribers(ofPattern: "a.*") == 1)
        #expect(!index.hasReceivers(for: "b.a"))
    }
}
