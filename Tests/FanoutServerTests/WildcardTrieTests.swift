import FanoutMulticast
import FanoutProtocol
import FanoutTestSupport
@testable import FanoutServer
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
        let trie = WildcardTrie<Member>()
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
        let trie = WildcardTrie<Member>()
        for pattern in patterns { trie.insert(pattern, set: MulticastDelegate()) }
        #expect(trie.nodeCount > 3_000)
        var generator = SeededGenerator(seed: 11)
        for pattern in patterns.shuffled(using: &generator) { trie.remove(pattern) }
        #expect(trie.nodeCount == 1, "only the root is left")
        #expect(trie.forEachMatch("a.a.a"[...]) { _ in Issue.record("nothing is stored") } == 1)
    }
}
