import DequeModule
import FanoutProtocol

/// Where a replay stands in one subject's retained messages: the next seq to send and the last one, read from
/// the subject's log a slice at a time. Messages of its range that leave the log first (its rule, the byte
/// bound, a reload, a restart of the numbering) are handed to `rescued` by the store, so that a replay
/// announced in a reply sends exactly what it announced, however long it takes.
final class HistoryCursor {
    let log: HistoryStore.Log
    /// The log's generation when the replay began: after the log was emptied at once, only `rescued` is read.
    let generation: UInt64
    private(set) var next: UInt64
    let last: UInt64
    /// Messages of the range that left the log before they were sent, oldest first, running on into the log.
    var rescued = Deque<HistoryStore.Message>()

    init(log: HistoryStore.Log, from first: UInt64, through last: UInt64) {
        self.log = log
        self.generation = log.generation
        self.next = first
        self.last = last
    }

    var isFinished: Bool { next > last }

    func stillNeeds(_ seq: UInt64) -> Bool { seq >= next && seq <= last }

    /// Appends the pushes (`MSG` or `BMSG`) of the next messages until `bytes` has grown by `limit` or more, or the range
    /// is sent. Returns whether messages are left.
    func encode(subject: UnsafeRawBufferPointer, into bytes: inout [UInt8], limit: Int, maxLine: Int) -> Bool {
        let stop = bytes.count + limit
        while next <= last && bytes.count < stop {
            guard let message = take() else {
                // Unreachable while the store rescues what leaves; a replay ends rather than loop.
                next = last + 1
                break
            }
            message.payload.withUnsafeBytes { payload in
                Encoder.appendPush(subject: subject, seq: message.seq, payload: payload, maxLine: maxLine, to: &bytes)
            }
            next = message.seq + 1
        }
        return next <= last
    }

    /// The message with seq `next`: rescued, or still in the log (whose seqs are consecutive).
    private func take() -> HistoryStore.Message? {
        if let rescuedMessage = rescued.first {
            rescued.removeFirst()
            return rescuedMessage
        }
        guard generation == log.generation, let first = log.firstSeq, next >= first else { return nil }
        let index = Int(next - first)
        return index < log.messages.count ? log.messages[index] : nil
    }
}

extension HistoryStore.Log {
    /// How many of the newest `wanted` messages fit in `budget` bytes of `MSG` lines for a subject of
    /// `subjectBytes` bytes, and their size: a binary search over the running payload totals, O(log retained).
    func newestFitting(_ wanted: Int, budget: Int, subjectBytes: Int) -> (count: Int, bytes: Int) {
        let end = messages.count
        var low = end - wanted, high = end
        // The smallest start whose lines fit; `end` (nothing) always fits.
        while low < high {
            let middle = (low + high) / 2
            if lineBytes(from: middle, subjectBytes: subjectBytes) <= budget { high = middle } else { low = middle + 1 }
        }
        return (end - low, lineBytes(from: low, subjectBytes: subjectBytes))
    }

    /// Bytes of the `MSG` lines of the messages from index `start` to the newest.
    private func lineBytes(from start: Int, subjectBytes: Int) -> Int {
        guard start < messages.count, let newest = messages.last else { return 0 }
        let first = messages[start]
        let payloads = newest.payloadBytesThrough - (first.payloadBytesThrough - UInt64(first.payload.count))
        let count = messages.count - start
        // "MSG " + subject + " " + seq + " " + payload + "\n"
        return count * (subjectBytes + 7) + DecimalDigits.total(from: first.seq, through: newest.seq) + Int(payloads)
    }
}
