extension HistoryStore {
    /// The logs that hold messages, as an indexed min-heap keyed by the publish order (`ordinal`) of each log's
    /// oldest message: `first` is the log whose oldest message is the oldest in the store, which the byte bound
    /// removes first. Each log keeps its position (`heapIndex`) so that it can leave or move in O(log logs).
    struct OldestFirstHeap {
        private var logs: [Log] = []

        /// The log holding the store's oldest message, or nil when no log holds any.
        var first: Log? { logs.first }

        /// Adds a log that has just had its first message.
        mutating func insert(_ log: Log) {
            log.heapIndex = logs.count
            logs.append(log)
            siftUp(log.heapIndex)
        }

        /// Removes a log that no longer holds messages; does nothing for one not in the heap.
        mutating func remove(_ log: Log) {
            let index = log.heapIndex
            guard index >= 0 else { return }
            let last = logs.count - 1
            swap(index, last)
            logs.removeLast()
            log.heapIndex = -1
            if index < logs.count {
                siftDown(index)
                siftUp(index)
            }
        }

        /// Moves a log whose oldest message left: its key only grew.
        mutating func oldestRemoved(from log: Log) {
            siftDown(log.heapIndex)
        }

        private func key(_ index: Int) -> UInt64 { logs[index].messages.first?.ordinal ?? .max }

        private mutating func siftUp(_ start: Int) {
            var index = start
            while index > 0 {
                let parent = (index - 1) / 2
                guard key(index) < key(parent) else { return }
                swap(index, parent)
                index = parent
            }
        }

        private mutating func siftDown(_ start: Int) {
            var index = start
            while true {
                let left = 2 * index + 1, right = left + 1
                var smallest = index
                if left < logs.count && key(left) < key(smallest) { smallest = left }
                if right < logs.count && key(right) < key(smallest) { smallest = right }
                guard smallest != index else { return }
                swap(index, smallest)
                index = smallest
            }
        }

        private mutating func swap(_ a: Int, _ b: Int) {
            guard a != b else { return }
            logs.swapAt(a, b)
            logs[a].heapIndex = a
            logs[b].heapIndex = b
        }
    }
}
