/// The connections one question was put to, by id, each silent, answered or gone: whether an ANSWER is taken,
/// and whether a departure counts as gone.
///
/// One array sorted by id, made once per question, searched by bisection: O(log asked) per answer and per
/// departure, O(asked log asked) to make. Asked connections are at most the server's connections, 16 bytes
/// each. A dictionary cost an allocation of its own and a hash on every lookup, most of a question's table work.
struct AskedConnections {
    enum State: UInt8 {
        case silent, answered, gone
    }

    private struct Entry {
        let id: UInt64
        var state: State
    }

    private var entries: [Entry]

    /// `count` connections, the id of each given by `id(index)`: each connection at most once, in any order.
    /// Mapped from a range, so that the array is allocated once at its size.
    init(count: Int, id: (Int) -> UInt64) {
        entries = (0..<count).map { Entry(id: id($0), state: .silent) }
        if count > 1 { entries.sort { $0.id < $1.id } }
    }

    init(ids: [UInt64]) {
        self.init(count: ids.count) { ids[$0] }
    }

    init() {
        entries = []
    }

    var count: Int { entries.count }

    /// Whether `id` was asked and has neither answered nor vanished.
    func isSilent(_ id: UInt64) -> Bool {
        guard let slot = slot(of: id) else { return false }
        return entries[slot].state == .silent
    }

    /// Marks a silent connection answered or gone; false (and nothing changes) when it was not asked, or
    /// answered or vanished already.
    mutating func settle(_ id: UInt64, as state: State) -> Bool {
        guard let slot = slot(of: id), entries[slot].state == .silent else { return false }
        entries[slot].state = state
        return true
    }

    private func slot(of id: UInt64) -> Int? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].id == id ? low : nil
    }
}
