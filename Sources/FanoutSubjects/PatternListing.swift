/// What a `CHANNELS` reply shows of a scan: the total, and the `limit` smallest patterns in order.
///
/// Bound: O(limit) memory and O(log limit) string comparisons per `add`, however many patterns are offered:
/// a max-heap keeps the smallest ones seen so far, and a pattern larger than all of them costs one comparison.
public struct PatternListing {
    public let limit: Int
    /// Patterns offered so far: the reply's count.
    public private(set) var total = 0
    /// A max-heap by pattern: the largest kept pattern is first, ready to be pushed out by a smaller one.
    private var heap: [(pattern: String, subscribers: Int)] = []

    public init(limit: Int) {
        self.limit = limit
    }

    /// Counts the pattern and keeps it if it is among the `limit` smallest so far.
    public mutating func add(_ pattern: String, subscribers: Int) {
        total += 1
        guard limit > 0 else { return }
        if heap.count < limit {
            heap.append((pattern, subscribers))
            siftUp(heap.count - 1)
        } else if pattern < heap[0].pattern {
            heap[0] = (pattern, subscribers)
            siftDown(0)
        }
    }

    /// The kept patterns, smallest first.
    public var entries: [(pattern: String, subscribers: Int)] {
        heap.sorted { $0.pattern < $1.pattern }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[parent].pattern < heap[child].pattern else { return }
            heap.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            var largest = parent
            let left = 2 * parent + 1, right = left + 1
            if left < heap.count && heap[largest].pattern < heap[left].pattern { largest = left }
            if right < heap.count && heap[largest].pattern < heap[right].pattern { largest = right }
            if largest == parent { return }
            heap.swapAt(parent, largest)
            parent = largest
        }
    }
}
