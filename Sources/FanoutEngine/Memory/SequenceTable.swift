/// Per-subject sequence numbers: 1, 2, 3, ... for each subject, assigned at publish.
///
/// Memory is bounded: at most `limit` subjects are remembered. When the table is full, subjects that
/// nobody is subscribed to are forgotten (their next message starts again at 1, which no live subscriber
/// can notice as a regression, because none was listening). If that is not enough, the table is halved.
public struct SequenceTable {
    private var last: [String: UInt64] = [:]
    /// May shrink or grow on reload; the table adapts at its next insertion.
    var limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Where `find` found a subject (or that it did not), so that `store` needs no second lookup: a publish
    /// run looks its subject up once when it opens and stores once when it closes. Valid until the table
    /// next changes; a stale one traps.
    public struct Slot {
        fileprivate let index: [String: UInt64].Index?
    }

    /// The last number handed out for `subject` (0 when none), and where it is kept.
    func find(_ subject: String) -> (last: UInt64, slot: Slot) {
        guard let index = last.index(forKey: subject) else { return (0, Slot(index: nil)) }
        return (last.values[index], Slot(index: index))
    }

    /// Records that numbers up to `value` are used for `subject`, at the `slot` that `find` gave for it if
    /// there is one. `isSubscribed` is asked only on overflow.
    mutating func store(_ value: UInt64, for subject: String, at slot: Slot? = nil, isSubscribed: (String) -> Bool) {
        if let index = slot?.index {
            last.values[index] = value
            return
        }
        let isNew = slot != nil || last[subject] == nil
        if isNew && last.count >= limit {
            last = last.filter { isSubscribed($0.key) }
            if last.count >= limit {
                last = Dictionary(uniqueKeysWithValues: last.prefix(limit / 2).map { ($0.key, $0.value) })
            }
        }
        last[subject] = value
    }

    var count: Int { last.count }
}
