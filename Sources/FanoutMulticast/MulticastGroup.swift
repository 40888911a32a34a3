/// Ask one member: a set of members held weakly, each at most once, of which `pick` chooses one per call,
/// in turn. The multicast delegate's second shape (a queue group): a job goes to one worker, not to all.
///
/// Bound: `add`, `remove`, `markReady` O(1); `pick` O(1) amortised, however many members the group holds. A
/// pick looks at members from a cursor, and every member it looks at without choosing it leaves the part it
/// looked in: a dead one is removed (paid for by its `add`), a busy one moves from the ready part to the busy
/// part (paid for by the `add` or `markReady` that put it in the ready part). So a group of 100,000 members
/// costs a pick what a group of 2 does; `probes` counts the members looked at, for the test that holds it.
///
/// Members that are busy (their caller says so: queued output over a mark) are chosen only when no member
/// of the ready part is left; the caller moves a member back with `markReady` once it is not busy any more.
/// Like `MulticastDelegate`, a member that dies stops being chosen at once, with no call to remove it.
///
/// Not thread-safe: one thread owns a group.
public final class MulticastGroup<Member: AnyObject> {
    @usableFromInline
    final class Entry {
        @usableFromInline weak var member: Member?
        let id: ObjectIdentifier

        init(member: Member, id: ObjectIdentifier) {
            self.member = member
            self.id = id
        }
    }

    /// `entries[0..<ready]` were not busy when last looked at; `entries[ready...]` were.
    private var entries: ContiguousArray<Entry> = []
    private var slotByMember: [ObjectIdentifier: Int] = [:]
    private var ready = 0
    private var cursor = 0
    private var busyCursor = 0
    /// Members looked at by `pick`, ever: for the test of the bound.
    public private(set) var probes = 0
    /// How widely the caller spreads a run of messages over the members: kept with the group, from run to run.
    public var pacing = GroupPacing()

    public init() {}

    /// Members stored, dead ones not yet removed included. O(1).
    public var storedCount: Int { entries.count }

    /// Live members. O(members).
    public var liveCount: Int { entries.reduce(0) { $0 + ($1.member == nil ? 0 : 1) } }

    public var hasLiveMember: Bool { entries.contains { $0.member != nil } }

    public func contains(_ member: Member) -> Bool { slotByMember[ObjectIdentifier(member)] != nil }

    /// Adds `member` to the ready part unless it is in the group; returns whether it was added.
    @discardableResult
    public func add(_ member: Member) -> Bool {
        let id = ObjectIdentifier(member)
        if let slot = slotByMember[id] {
            // A stale entry of a dead object whose address was reused: replace it.
            guard entries[slot].member == nil else { return false }
            removeSlot(slot)
        }
        entries.append(Entry(member: member, id: id))
        slotByMember[id] = entries.count - 1
        swapSlots(entries.count - 1, ready)
        ready += 1
        return true
    }

    /// Removes `member`; returns whether it was there.
    @discardableResult
    public func remove(_ member: Member) -> Bool {
        guard let slot = slotByMember[ObjectIdentifier(member)] else { return false }
        removeSlot(slot)
        return true
    }

    /// Moves `member` back to the ready part: it is not busy any more.
    public func markReady(_ member: Member) {
        guard let slot = slotByMember[ObjectIdentifier(member)], slot >= ready else { return }
        swapSlots(slot, ready)
        ready += 1
    }

    /// Chooses the next member in turn that is not `excluded` and not busy, or, when every other member is
    /// busy, the next busy one; nil when no other live member is left.
    public func pick(excluding excluded: Member? = nil, isBusy: (Member) -> Bool) -> Member? {
        let excludedID = excluded.map(ObjectIdentifier.init)
        var excludedSeen = false
        while ready > 0 {
            if cursor >= ready { cursor = 0 }
            let entry = entries[cursor]
            probes &+= 1
            guard let member = entry.member else {
                removeSlot(cursor)
                continue
            }
            if entry.id == excludedID {
                // Passed over once; seen again, the ready part holds nobody else.
                if excludedSeen { break }
                excludedSeen = true
                cursor += 1
                continue
            }
            if isBusy(member) {
                let slot = cursor
                ready -= 1
                swapSlots(slot, ready)
                continue
            }
            cursor += 1
            return member
        }
        excludedSeen = false
        while entries.count > ready {
            if busyCursor < ready || busyCursor >= entries.count { busyCursor = ready }
            let entry = entries[busyCursor]
            probes &+= 1
            guard let member = entry.member else {
                removeSlot(busyCursor)
                continue
            }
            if entry.id == excludedID {
                if excludedSeen { return nil }
                excludedSeen = true
                busyCursor += 1
                continue
            }
            if !isBusy(member) {
                markReady(member)
                return member
            }
            busyCursor += 1
            return member
        }
        return nil
    }

    /// Removes the dead members; returns how many went. O(members): the server's sweep, a slice at a time.
    @discardableResult
    public func prune() -> Int {
        var removed = 0
        var slot = entries.count - 1
        while slot >= 0 {
            if slot < entries.count, entries[slot].member == nil {
                removeSlot(slot)
                removed += 1
            }
            slot -= 1
        }
        return removed
    }

    /// Swaps two slots, keeping `slotByMember` right.
    private func swapSlots(_ first: Int, _ second: Int) {
        guard first != second else { return }
        entries.swapAt(first, second)
        slotByMember[entries[first].id] = first
        slotByMember[entries[second].id] = second
    }

    /// Removes the entry at `slot`, keeping both parts contiguous.
    private func removeSlot(_ slot: Int) {
        var slot = slot
        if slot < ready {
            swapSlots(slot, ready - 1)
            ready -= 1
            slot = ready
        }
        swapSlots(slot, entries.count - 1)
        slotByMember[entries[entries.count - 1].id] = nil
        entries.removeLast()
        if entries.isEmpty {
            slotByMember = [:]
            entries = []
        }
    }
}
