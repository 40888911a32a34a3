import FanoutMulticast
import FanoutProtocol
import FanoutTestSupport
@testable import FanoutSubjects
import Testing

private final class Member: Subscriber {
    let name: String
    var deliveryMark: UInt64 = 0
    init(_ name: String) { self.name = name }
}

/// Σ_{d=0...16} Σ_{k=0...3} C(d, k): the trie nodes a walk may visit within the pattern limits.
private let walkBound = 3_213

/// Every wildcard pattern the limits allow over the tokens `a`, `*`, `>` and a last `q`: each one matches, or
/// nearly matches, `a.a.….a`, and together they hold every trie node such a subject can reach.
private func adversarialPatterns() -> [String] {
    var patterns: [String] = []
    // Prefixes over {a, *} with at most 3 stars, grown one token at a time up to 15 tokens.
    var prefixes: [(tokens: [String], stars: Int)] = [([], 0)]
    for _ in 0..<Subject.maxWildcardPatternTokens {
        var longer: [(tokens: [String], stars: Int)] = []
        for (tokens, stars) in prefixes {
            patterns.append((tokens + [">"]).joined(separator: "."))
            if stars < Subject.maxStarTokens { patterns.append((tokens + ["*"]).joined(separator: ".")) }
            if stars > 0 {
                patterns.append((tokens + ["a"]).joined(separator: "."))
                patterns.append((tokens + ["q"]).joined(separator: "."))
            }
            if tokens.count < Subject.maxWildcardPatternTokens - 1 {
                longer.append((tokens + ["a"], stars))
                if stars < Subject.maxStarTokens { longer.append((tokens + ["*"], stars + 1)) }
            }
        }
        prefixes = longer
    }
    return patterns
}

@Suite("WildcardTrie")
struct WildcardTrieTests {
    @Test func adversarialPatternsCannotPushAWalkPastTheBound() {
        let patterns = adversarialPatterns()
        #expect(Set(patterns).count == patterns.count)
        #expect(patterns.allSatisfy { Subject.isValidPattern($0) && Subject.wildcardPatternProblem($0) == nil })
        let trie = WildcardTrie<MulticastDelegate<Member>>()
        let sets = patterns.map { _ in MulticastDelegate<Member>() }
        for (pattern, set) in zip(patterns, sets) { trie.insert(pattern, set: set) }

        var most = 0
        for length in 1...128 {
            let subject = Array(repeating: "a", count: length).joined(separator: ".")
            var matched = 0
            let visits = trie.forEachMatch(subject[...]) { _ in matched += 1 }
            most = max(most, visits)
            #expect(visits <= walkBound, "\(length) tokens")
            if [1, 2, 3, 15, 16, 17, 128].contains(length) {
                let expected = patterns.filter { Subject.matches(pattern: $0, subject: subject) }.count
                #expect(matched == expected, "\(length) tokens")
            }
        }
        #expect(most > walkBound - 50, "the patterns reach nearly every node the bound allows (\(most))")

        var generator = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            let length = Int(generator.next() % 128) + 1
            let tokens = (0..<length).map { _ in ["a", "q", "b"][Int(generator.next() % 3)] }
            let visits = trie.forEachMatch(tokens.joined(separator: ".")[...]) { _ in }
            #expect(visits <= walkBound)
        }
    }

    @Test func removingEveryPatternPrunesEveryNode() {
        let patterns = adversarialPatterns()
        let trie = WildcardTrie<MulticastDelegate<Member>>()
        for pattern in patterns { trie.insert(pattern, set: MulticastDelegate()) }
        #expect(trie.nodeCount > 3_000)
        var generator = SeededGenerator(seed: 11)
        for pattern in patterns.shuffled(using: &generator) { trie.remove(pattern) }
        #expect(trie.nodeCount == 1, "only the root is left")
        #expect(trie.forEachMatch("a.a.a"[...]) { _ in Issue.record("nothing is stored") } == 1)
    }

    /// Property: with subscriptions and unsubscriptions interleaved, the index agrees with the reference matcher,
    /// and once everyone has left, nothing is stored.
    @Test(arguments: [UInt64(1), 2, 3])
    func incrementalUpdatesAgreeWithTheReferenceMatcher(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let tokens = ["a", "b", "cc"]
        func randomSubject(wildcards: Bool) -> String {
            let count = Int(generator.next() % 5) + 1
            var stars = 0
            return (0..<count).map { position -> String in
                let roll = generator.next() % 8
                if wildcards && roll == 0 && stars < Subject.maxStarTokens {
                    stars += 1
                    return "*"
                }
                if wildcards && roll == 1 && position == count - 1 { return ">" }
                return tokens[Int(generator.next() % UInt64(tokens.count))]
            }.joined(separator: ".")
        }
        let index = SubjectIndex<Member>()
        let members = (0..<12).map { Member("m\($0)") }
        var model: [String: Set<String>] = [:]  // pattern → member names
        for step in 0..<1_200 {
            let member = members[Int(generator.next() % UInt64(members.count))]
            if generator.next() % 5 < 3 {
                let pattern = randomSubject(wildcards: true)
                index.subscribe(member, to: pattern)
                model[pattern, default: []].insert(member.name)
            } else if let (pattern, names) = model.randomElement(using: &generator) {
                let name = names.randomElement(using: &generator)!
                let victim = members.first { $0.name == name }!
                #expect(index.unsubscribe(victim, from: pattern))
                model[pattern]!.remove(name)
                if model[pattern]!.isEmpty { model[pattern] = nil }
            }
            if step % 20 == 0 {
                for _ in 0..<20 {
                    let subject = randomSubject(wildcards: false)
                    var expected = Set<String>()
                    for (pattern, names) in model where Subject.matches(pattern: pattern, subject: subject) {
                        expected.formUnion(names)
                    }
                    var found: [Member] = []
                    index.collectReceivers(of: subject, into: &found)
                    #expect(Set(found.map(\.name)) == expected, "\(subject) at step \(step)")
                    #expect(found.count == expected.count, "each member once")
                }
            }
            #expect(index.storedPatternCount == model.count)
        }
        for (pattern, names) in model {
            for name in names { index.unsubscribe(members.first { $0.name == name }!, from: pattern) }
        }
        #expect(index.storedPatternCount == 0)
        #expect(index.trie.nodeCount == 1, "emptied patterns leave no node behind")
    }
}
