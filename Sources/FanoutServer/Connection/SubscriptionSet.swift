/// The patterns one connection subscribes to: the subscriber → patterns direction of the subject index.
///
/// Most connections hold one pattern, and a `Set<String>` of one element is a 112-byte allocation. One pattern
/// is kept in place instead (no allocation at all for a pattern of up to 15 bytes, which Swift strings store
/// inline); a set is made for the second and given up again when one pattern is left.
struct SubscriptionSet: Sequence {
    private enum Storage {
        case none
        case one(String)
        case many(Set<String>)
    }

    private var storage = Storage.none

    var count: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let patterns): patterns.count
        }
    }

    var isEmpty: Bool { count == 0 }

    var underestimatedCount: Int { count }

    func contains(_ pattern: String) -> Bool {
        switch storage {
        case .none: false
        case .one(let held): held == pattern
        case .many(let patterns): patterns.contains(pattern)
        }
    }

    @discardableResult
    mutating func insert(_ pattern: String) -> (inserted: Bool, memberAfterInsert: String) {
        switch storage {
        case .none:
            storage = .one(pattern)
            return (true, pattern)
        case .one(let held):
            if held == pattern { return (false, held) }
            storage = .many([held, pattern])
            return (true, pattern)
        case .many(var patterns):
            // Let go of the stored reference first, so that the set is unique and grows in place.
            storage = .none
            let result = patterns.insert(pattern)
            storage = .many(patterns)
            return result
        }
    }

    @discardableResult
    mutating func remove(_ pattern: String) -> String? {
        switch storage {
        case .none:
            return nil
        case .one(let held):
            guard held == pattern else { return nil }
            storage = .none
            return held
        case .many(var patterns):
            storage = .none
            let removed = patterns.remove(pattern)
            storage = patterns.count > 1 ? .many(patterns) : patterns.first.map(Storage.one) ?? .none
            return removed
        }
    }

    mutating func removeAll() {
        storage = .none
    }

    struct Iterator: IteratorProtocol {
        fileprivate var single: String?
        fileprivate var rest: Set<String>.Iterator?

        mutating func next() -> String? {
            if let pattern = single {
                single = nil
                return pattern
            }
            return rest?.next()
        }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .none: Iterator()
        case .one(let held): Iterator(single: held)
        case .many(let patterns): Iterator(rest: patterns.makeIterator())
        }
    }
}
