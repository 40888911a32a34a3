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

/// What one stored wildcard pattern costs, measured from the resident size. Other tests allocate at the same
/// time, so this runs only on request, alone:
/// `FANOUT_MEASURE_MEMORY=1 swift test --filter WildcardMemoryTests`.
@Suite("Wildcard index memory")
struct WildcardMemoryTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FANOUT_MEASURE_MEMORY"] != nil))
    func bytesPerLongestPattern() {
        var generator = SeededGenerator(seed: 1)
        let count = 50_000
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
