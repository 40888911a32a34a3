/// Per-subject sequence numbers: 1, 2, 3, ... for each subject, assigned at publish.
///
/// Memory is bounded: at most `limit` subjects are remembered. When the table is full, subjects that
/// nobody is subscribed to are forgotten (their next message starts again at 1, which no live subscriber
/// can notice as a regression, because none was listening). If that is not enough, the table is halved.
struct SequenceTable {
    private var last: [String: UInt64] = [:]
    /// May shrink or grow on reload; the table adapts at its next insertion.
    var limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// The last number handed out for `subject` (0 when none).
    func current(_ subject: String) -> UInt64 {
        last[subject] ?? 0
    }

    /// Records that numbers up to `value` are used for `subject`. `isSubscribed` is asked only on overflow.
    mutating func store(_ value: UInt64, for subject: String, isSubscribed: (String) -> Bool) {
        if last[subject] == nil && last.count >= limit {
            last = last.filter { isSubscribed($0.key) }
            if last.count >= limit {
                last = Dictionary(uniqueKeysWithValues: last.prefix(limit / 2).map { ($0.key, $0.value) })
            }
        }
        last[subject] = value
    }

    var count: Int { last.count }
}
