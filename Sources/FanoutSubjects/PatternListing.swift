import HeapModule

/// What a `CHANNELS` reply shows of a scan: the total, and the `limit` smallest patterns in order.
///
/// Bound: O(limit) memory and O(log limit) string comparisons per `add`, however many patterns are offered:
/// a heap keeps the smallest ones seen so far, and a pattern larger than all of them costs one comparison.
public struct PatternListing {
    public let limit: Int
    /// Patterns offered so far: the reply's count.
    public private(set) var total = 0
    /// The smallest patterns so far; its largest is the one a smaller newcomer pushes out.
    private var kept = Heap<Entry>()

    /// A kept pattern, ordered by name alone: the count rides along.
    private struct Entry: Comparable {
        let pattern: String
        let subscribers: Int

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.pattern < rhs.pattern }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.pattern == rhs.pattern }
    }

    public init(limit: Int) {
        self.limit = limit
    }

    /// Counts the pattern and keeps it if it is among the `limit` smallest so far.
    public mutating func add(_ pattern: String, subscribers: Int) {
        total += 1
        guard limit > 0 else { return }
        if kept.count < limit {
            kept.insert(Entry(pattern: pattern, subscribers: subscribers))
        } else if let largest = kept.max, pattern < largest.pattern {
            kept.replaceMax(with: Entry(pattern: pattern, subscribers: subscribers))
        }
    }

    /// The kept patterns, smallest first.
    public var entries: [(pattern: String, subscribers: Int)] {
        kept.unordered.sorted().map { ($0.pattern, $0.subscribers) }
    }
}
