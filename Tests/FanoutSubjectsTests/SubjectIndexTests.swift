import FanoutTestSupport
@testable import FanoutSubjects
import FanoutProtocol
import Testing

private final class Member: Subscriber {
    let name: String
    var deliveryMark: UInt64 = 0
    init(_ name: String) { self.name = name }
}

private func receivers(_ index: SubjectIndex<Member>, _ subject: String) -> [String] {
    var found: [Member] = []
    index.collectReceivers(of: subject, into: &found)
    return found.map(\.name).sorted()
}

@Suite("SubjectIndex")
struct SubjectIndexTests {
    @Test func exactAndWildcardMatching() {
        let index = SubjectIndex<Member>()
        let a = Member("a"), b = Member("b"), c = Member("c"), d = Member("d")
        index.subscribe(a, to: "news.uk")
        index.subscribe(b, to: "news.*")
        index.subscribe(c, to: "news.>")
        index.subscribe(d, to: ">")
        #expect(receivers(index, "news.uk") == ["a", "b", "c", "d"])
        #expect(receivers(index, "news.fr") == ["b", "c", "d"])
        #expect(receivers(index, "news.uk.london") == ["c", "d"])
        #expect(receivers(index, "news") == ["d"])
        #expect(receivers(index, "sport") == ["d"])
    }

    @Test func aMemberIsCollectedOnceHoweverManyPatternsMatch() {
        let index = SubjectIndex<Member>()
        let a = Member("a")
        for pattern in ["x.y", "x.*", "x.>", "*.y", ">", "*.*"] { index.subscribe(a, to: pattern) }
        #expect(receivers(index, "x.y") == ["a"])
        #expect(receivers(index, "x.y") == ["a"], "and again on the next publish")
    }

    @Test func unsubscribeRemovesOnlyThatPattern() {
        let index = SubjectIndex<Member>()
        let a = Member("a")
        index.subscribe(a, to: "x.*")
        index.subscribe(a, to: "x.y")
        #expect(index.unsubscribe(a, from: "x.y"))
        #expect(!index.unsubscribe(a, from: "x.y"))
        #expect(receivers(index, "x.y") == ["a"])
        index.unsubscribe(a, from: "x.*")
        #expect(receivers(index, "x.y").isEmpty)
        index.sweep()
        #expect(index.patterns.isEmpty)
    }

    @Test func deadMembersVanishFromEverySetWithoutUnsubscribing() {
        let index = SubjectIndex<Member>()
        let keeper = Member("keeper")
        index.subscribe(keeper, to: "a.b")
        weak var weakGone: Member?
        do {
            let gone = Member("gone")
            weakGone = gone
            for pattern in ["a.b", "a.*", "a.>", "only.gone"] { index.subscribe(gone, to: pattern) }
        }
        #expect(weakGone == nil, "the index must not keep a member alive")
        #expect(receivers(index, "a.b") == ["keeper"])
        #expect(receivers(index, "a.c").isEmpty)
        #expect(receivers(index, "only.gone").isEmpty)
        index.sweep()
        #expect(index.patterns.map(\.pattern) == ["a.b"], "patterns with no live member are swept")
        #expect(index.patterns.first?.subscribers == 1)
    }

    /// Property: the trie agrees with the reference matcher for random patterns and subjects.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func agreesWithTheReferenceMatcher(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let tokens = ["a", "b", "c", "dd"]
        func randomSubject(wildcards: Bool) -> String {
            let count = Int(generator.next() % 4) + 1
            return (0..<count).map { position -> String in
                let roll = generator.next() % 10
                if wildcards && roll == 0 { return "*" }
                if wildcards && roll == 1 && position == count - 1 { return ">" }
                return tokens[Int(generator.next() % UInt64(tokens.count))]
            }.joined(separator: ".")
        }
        let index = SubjectIndex<Member>()
        var members: [(Member, String)] = []
        for number in 0..<150 {
            let member = Member("m\(number)")
            let pattern = randomSubject(wildcards: true)
            index.subscribe(member, to: pattern)
            members.append((member, pattern))
        }
        for _ in 0..<300 {
            let subject = randomSubject(wildcards: false)
            let expected = members.filter { Subject.matches(pattern: $0.1, subject: subject) }.map(\.0.name).sorted()
            #expect(receivers(index, subject) == expected, "\(subject)")
        }
    }
}

@Suite("SubjectIndex's size")
struct SubjectIndexSizeTests {
    /// A server holds a pattern per subscribed subject, which is its own member set: one object in glibc's
    /// 80-byte chunks (72 usable bytes), where a pattern and a separate set took 64 and 48.
    @Test func aPatternAndItsSetAreOneObjectOfAn80ByteChunk() {
        let pattern = SubjectIndex<Member>.Pattern(name: "orders.eu", isWildcard: false)
        #expect((1...72).contains(mallocUsableSize(of: pattern)))
    }
}
