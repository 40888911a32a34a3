import Foundation
import FanoutTestSupport
@testable import FanoutSubjects
import Testing

private final class Member: Subscriber {
    var deliveryMark: UInt64 = 0
}

/// The process's resident bytes. Coarse, but 50,000 patterns move it by a hundred megabytes and more.
private func residentBytes() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// What one stored wildcard pattern costs, measured from the resident size, on every run. 10,000 of the
/// costliest patterns take about 3,100 bytes each (31 MB; two seconds in a debug build), against a bound of
/// 8,000. Tests running at the same time can only add to the growth: a false failure would need them to grow
/// the process by some 48 MB in those two seconds. Memory they freed, which the index reuses, is not counted,
/// so the measure errs low by at most what was free.
@Suite("Wildcard index memory")
struct WildcardMemoryTests {
    @Test func bytesPerLongestPattern() {
        var generator = SeededGenerator(seed: 1)
        let count = 10_000
        // 16 tokens, 3 stars, and a random first token: no two patterns share a node, the costliest case.
        let patterns = (0..<count).map { _ in
            (0..<16).map { position in
                [5, 9, 12].contains(position) ? "*" : "t\(generator.next() % 1_000_000)"
            }.joined(separator: ".")
        }
        let member = Member()
        let index = SubjectIndex<Member>()
        let before = residentBytes()
        for pattern in patterns { index.subscribe(member, to: pattern) }
        let perPattern = (residentBytes() - before) / count
        print("one 16-token wildcard pattern costs \(perPattern) bytes, \(index.trie.nodeCount) trie nodes")
        #expect(perPattern < 8_000)
        withExtendedLifetime(member) {}
    }
}
