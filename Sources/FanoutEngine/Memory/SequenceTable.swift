import FanoutCollections
/// Per-subject sequence numbers: 1, 2, 3, ... for each subject, assigned at publish.
///
/// Bound: at most 2 × `limit` subjects (the second `limit` only for subscribed ones); a store is one hash lookup (none at a fresh `Slot`) plus O(1) list
/// moves, and a new subject in a full table adds ≤ 8 `isSubscribed` calls (16 above a lowered limit) and 2
/// hash updates.
///
/// When the table is full, a new subject evicts the least recently published one that nobody is subscribed to
/// (its next message starts again at 1 under a new epoch, which no live subscriber can see as a regression,
/// because none was listening): the least recent few are asked, subscribed ones are moved to the recent end
/// as if just published, and if all were subscribed the table takes the new subject without evicting, so that a
/// subject is not renumbered under its subscribers, up to twice its limit (a `>` subscriber makes every subject
/// subscribed); past that the least recent goes regardless. The order is a doubly linked list threaded through one
/// array, with a dictionary from subject to array position.
public struct SequenceTable {
    /// How many of the least recent subjects an eviction asks about before it takes the oldest regardless.
    static let candidatesLooked = 8

    private struct Entry {
        var subject: String
        var last: UInt64
        /// How many subjects had been evicted when this one came in: 0 for a subject whose numbering never
        /// restarted, otherwise a number no earlier entry of the same subject can have had (see `serial`).
        var serial: UInt64
        /// Neighbours in publish order, as positions in `entries`; `none` at either end.
        var older: Int32
        var newer: Int32
    }

    private static let none: Int32 = -1

    private var positions = ShardedDictionary<String, Int32>()
    private var entries: [Entry] = []
    private var oldest = none
    private var newest = none
    /// Changes whenever a subject comes or goes, making the slots handed out before it stale.
    private var generation: UInt64 = 0
    /// Subjects forgotten to make room so far.
    var evictions: UInt64 = 0
    /// Added to every serial handed out from now on: 0 normally; after a crash, a number above every serial
    /// used before it (the wall clock in nanoseconds), so that a subject whose numbering was lost enters
    /// under an epoch never used before.
    var serialBase: UInt64 = 0

    /// May shrink or grow on reload. A table above a lowered limit sheds one subject per new subject stored,
    /// so that no single store pays for the whole difference.
    var limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Where `find` found a subject (or that it did not), so that `store` needs no second lookup: a publish
    /// run looks its subject up once when it opens and stores once when it closes. A slot that went stale
    /// (a subject came or went in between) is noticed, and costs a lookup.
    public struct Slot {
        fileprivate let position: Int32
        fileprivate let generation: UInt64
    }

    /// The last number handed out for `subject` (0 when none), and where it is kept.
    func find(_ subject: String) -> (last: UInt64, slot: Slot) {
        guard let position = positions[subject] else { return (0, Slot(position: Self.none, generation: generation)) }
        return (entries[Int(position)].last, Slot(position: position, generation: generation))
    }

    /// The last number handed out for `subject` and its numbering's serial (see `Entry.serial`), entering it
    /// with 0 when it is not known, so that its serial holds from now on.
    mutating func ensure(
        _ subject: String, isSubscribed: (String) -> Bool
    ) -> (last: UInt64, serial: UInt64, evicted: [String]) {
        if let position = positions[subject] {
            let entry = entries[Int(position)]
            return (entry.last, entry.serial, [])
        }
        let evicted = insert(subject, last: 0, isSubscribed: isSubscribed)
        return (0, entries[Int(positions[subject]!)].serial, evicted)
    }

    /// Records that numbers up to `value` are used for `subject`, at the `slot` that `find` gave for it if
    /// there is one, and makes it the most recently published. `isSubscribed` is asked only when a new subject
    /// meets a full table, at most `candidatesLooked` times per subject evicted. Returns the subject evicted
    /// to make room, if any.
    @discardableResult
    mutating func store(
        _ value: UInt64, for subject: String, at slot: Slot? = nil, isSubscribed: (String) -> Bool
    ) -> [String] {
        var position = Self.none
        if let slot, slot.generation == generation {
            position = slot.position
        } else if let found = positions[subject] {
            position = found
        }
        if position != Self.none {
            entries[Int(position)].last = value
            touch(position)
            return []
        }
        return insert(subject, last: value, isSubscribed: isSubscribed)
    }

    var count: Int { entries.count }

    /// The numbering serial of the subject at `slot` (from `find`), or nil when the subject was not there.
    func serial(at slot: Slot) -> UInt64? {
        guard slot.generation == generation, slot.position != Self.none else { return nil }
        return entries[Int(slot.position)].serial
    }

    /// Enters a subject as it stood before a restart, as the most recent, without evicting anything.
    mutating func restore(_ subject: String, last: UInt64, serial: UInt64) {
        if let position = positions[subject] {
            entries[Int(position)].last = max(entries[Int(position)].last, last)
            entries[Int(position)].serial = serial
            return
        }
        generation &+= 1
        let position = Int32(entries.count)
        entries.append(Entry(subject: subject, last: last, serial: serial, older: Self.none, newer: Self.none))
        positions[subject] = position
        linkNewest(position)
    }

    /// Every subject with its last number and serial, least recently published first.
    func snapshot() -> [(subject: String, last: UInt64, serial: UInt64)] {
        var out: [(subject: String, last: UInt64, serial: UInt64)] = []
        out.reserveCapacity(entries.count)
        var position = oldest
        while position != Self.none {
            let entry = entries[Int(position)]
            out.append((entry.subject, entry.last, entry.serial))
            position = entry.newer
        }
        return out
    }

    /// Enters `subject`, evicting when the table is full; returns the subjects evicted (none, one, or two
    /// while shrinking to a lowered limit).
    private mutating func insert(_ subject: String, last: UInt64, isSubscribed: (String) -> Bool) -> [String] {
        generation &+= 1
        var evicted: [String] = []
        var position: Int32
        if entries.count >= max(limit, 1) {
            // Shed one more than needed when above a lowered limit: the table converges, one store at a time.
            if entries.count > limit && entries.count > 1, let extra = evictionVictim(isSubscribed) {
                evicted.append(entries[Int(extra)].subject)
                removeAndCompact(extra)
            }
            if let victim = evictionVictim(isSubscribed) {
                position = victim
                unlink(position)
                evicted.append(entries[Int(position)].subject)
                positions[entries[Int(position)].subject] = nil
                evictions += UInt64(evicted.count)
                entries[Int(position)] = Entry(subject: subject, last: last, serial: serialBase &+ evictions, older: Self.none,
                                               newer: Self.none)
            } else {
                evictions += UInt64(evicted.count)
                position = Int32(entries.count)
                entries.append(Entry(subject: subject, last: last, serial: serialBase &+ evictions, older: Self.none, newer: Self.none))
            }
        } else {
            position = Int32(entries.count)
            entries.append(Entry(subject: subject, last: last, serial: serialBase &+ evictions, older: Self.none, newer: Self.none))
        }
        positions[subject] = position
        linkNewest(position)
        return evicted
    }

    /// The entry to evict: the least recent unsubscribed one among the `candidatesLooked` least recent (the
    /// subscribed ones are moved to the recent end); nil when all of them are subscribed and the table may still
    /// grow, else the least recent one.
    private mutating func evictionVictim(_ isSubscribed: (String) -> Bool) -> Int32? {
        for _ in 0..<min(Self.candidatesLooked, entries.count) {
            let candidate = oldest
            if !isSubscribed(entries[Int(candidate)].subject) { return candidate }
            touch(candidate)
        }
        return entries.count >= 2 * max(limit, 1) ? oldest : nil
    }

    /// Removes the entry at `position`, moving the last entry into its place to keep the array dense.
    private mutating func removeAndCompact(_ position: Int32) {
        unlink(position)
        positions[entries[Int(position)].subject] = nil
        let last = Int32(entries.count - 1)
        if position != last {
            let moved = entries[Int(last)]
            entries[Int(position)] = moved
            positions[moved.subject] = position
            if moved.older != Self.none { entries[Int(moved.older)].newer = position } else { oldest = position }
            if moved.newer != Self.none { entries[Int(moved.newer)].older = position } else { newest = position }
        }
        entries.removeLast()
    }

    /// Makes the entry at `position` the most recent.
    private mutating func touch(_ position: Int32) {
        guard position != newest else { return }
        unlink(position)
        linkNewest(position)
    }

    private mutating func unlink(_ position: Int32) {
        let older = entries[Int(position)].older, newer = entries[Int(position)].newer
        if older != Self.none { entries[Int(older)].newer = newer } else { oldest = newer }
        if newer != Self.none { entries[Int(newer)].older = older } else { newest = older }
        entries[Int(position)].older = Self.none
        entries[Int(position)].newer = Self.none
    }

    private mutating func linkNewest(_ position: Int32) {
        entries[Int(position)].older = newest
        entries[Int(position)].newer = Self.none
        if newest != Self.none { entries[Int(newest)].newer = position } else { oldest = position }
        newest = position
    }
}
