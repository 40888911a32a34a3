/// How a group member's caller sees its load when a pick looks at it: `ready` to take work, `busy` (its queued
/// output is over a mark, or waits for the kernel to take it), or `stalled` (it cannot take work at all). The
/// group itself counts a busy member as stalled once other members came back from busy while it did not.
public enum MemberLoad: Sendable {
    case ready, busy, stalled
}

/// Ask one member: a set of members held weakly, each at most once, of which `pick` chooses one per call,
/// in turn. The multicast delegate's second shape (a queue group): a job goes to one worker, not to all.
///
/// Bound: `add`, `remove`, `markReady` O(1); `pick` O(1) amortised, however many members the group holds. A
/// pick looks at members from a cursor, and every member it looks at without choosing it leaves the part it
/// looked in: a dead one is removed (paid for by its `add`), a busy one moves from the ready part to the busy
/// part, a stalled one to the stalled part (paid for by the `add` or `markReady` that put it in the ready part).
/// So a group of 100,000 members costs a pick what a group of 2 does; `probes` counts the members looked at, for
/// the test that holds it. The one exception is a member the caller passes over for this pick only (a user who
/// may not see the subject): it stays where it is, so each pick pays one probe per such member it meets, and
/// a pick that finds no member at all looks at every member once, O(members).
///
/// Members that are busy (their caller says so: queued output over a mark, or the kernel refusing it) are chosen
/// only when no member of the ready part is left, and stalled ones only when no busy one is left either: a
/// message is never held back, it goes to the least loaded part. The caller moves a member back with
/// `markReady` once it drained. A busy member that stays busy while `stallAfterComebacks` `markReady`s bring
/// other members back is stalled: it has stopped reading, or reads far slower than they do, and is handed work
/// only when every other member is stalled too, and then the stalled member that came back last (among the next
/// `stalledLook`, so that the pick stays O(1)) is chosen. Like `MulticastDelegate`, a member that dies stops
/// being chosen at once, with no call to remove it.
///
/// Not thread-safe: one thread owns a group.
public final class MulticastGroup<Member: AnyObject> {
    @usableFromInline
    final class Entry {
        @usableFromInline weak var member: Member?
        let id: ObjectIdentifier
        /// The group's `comebacks` when this member left the ready part.
        var busyFrom = 0
        /// The group's `comebacks` when this member last came back to the ready part (or joined).
        var cameBack = 0

        init(member: Member, id: ObjectIdentifier) {
            self.member = member
            self.id = id
        }
    }

    /// `entries[0..<ready]` were ready when last looked at, `entries[ready..<stalledStart]` busy, and
    /// `entries[stalledStart...]` stalled. O(members) words.
    private var entries: ContiguousArray<Entry> = []
    private var slotByMember: [ObjectIdentifier: Int] = [:]
    private var ready = 0
    private var stalledStart = 0
    private var cursor = 0
    private var busyCursor = 0
    private var stalledCursor = 0
    /// Members moved back to the ready part by `markReady` (or found ready again by a pick), ever: the clock by
    /// which a busy member is found stalled, counted in the others' progress rather than in time.
    private var comebacks = 0
    /// Comebacks of other members after which a member still busy counts as stalled.
    public static var stallAfterComebacks: Int { 2 }
    /// Stalled members a pick compares, when only stalled ones are left.
    static var stalledLook: Int { 8 }
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
        let entry = Entry(member: member, id: id)
        entry.cameBack = comebacks
        entries.append(entry)
        slotByMember[id] = entries.count - 1
        moveToReady(entries.count - 1)
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
        comebacks &+= 1
        entries[slot].cameBack = comebacks
        moveToReady(slot)
    }

    /// `pick(excluding:passingOver:load:)` for a caller that knows busy or not only.
    public func pick(excluding excluded: Member? = nil, isBusy: (Member) -> Bool) -> Member? {
        pick(excluding: excluded, passingOver: { _ in false }, load: { isBusy($0) ? .busy : .ready })
    }

    /// Chooses the next member in turn that is not `excluded`, not passed over (`passingOver` true: it may not
    /// take this one) and ready; when no such member is ready, the next busy one, then the next stalled one;
    /// nil when no other live member is left.
    public func pick(excluding excluded: Member? = nil, passingOver: (Member) -> Bool,
                     load: (Member) -> MemberLoad) -> Member? {
        let excludedID = excluded.map(ObjectIdentifier.init)
        var skipped = 0
        while ready > 0 && skipped < ready {
            if cursor >= ready { cursor = 0 }
            let entry = entries[cursor]
            probes &+= 1
            guard let member = entry.member else {
                removeSlot(cursor)
                continue
            }
            if entry.id == excludedID || passingOver(member) {
                skipped += 1
                cursor += 1
                continue
            }
            switch load(member) {
            case .ready:
                cursor += 1
                return member
            case .busy:
                entry.busyFrom = comebacks
                ready -= 1
                swapSlots(cursor, ready)
            case .stalled:
                ready -= 1
                swapSlots(cursor, ready)
                stalledStart -= 1
                swapSlots(ready, stalledStart)
            }
        }
        skipped = 0
        while stalledStart - ready > skipped {
            if busyCursor < ready || busyCursor >= stalledStart { busyCursor = ready }
            let entry = entries[busyCursor]
            probes &+= 1
            guard let member = entry.member else {
                removeSlot(busyCursor)
                continue
            }
            if entry.id == excludedID || passingOver(member) {
                skipped += 1
                busyCursor += 1
                continue
            }
            switch load(member) {
            case .ready:
                comebacks &+= 1
                entry.cameBack = comebacks
                moveToReady(busyCursor)
                return member
            case .busy where comebacks &- entry.busyFrom < Self.stallAfterComebacks:
                busyCursor += 1
                return member
            case .busy, .stalled:
                stalledStart -= 1
                swapSlots(busyCursor, stalledStart)
            }
        }
        // Every member left is stalled: the one that most recently came back among the next `stalledLook`,
        // so that a member that never drained since it stalled is the last one chosen.
        let stalledCount = entries.count - stalledStart
        var slot = stalledCursor
        var best = -1
        for _ in 0..<min(stalledCount, Self.stalledLook) {
            if slot < stalledStart || slot >= entries.count { slot = stalledStart }
            let entry = entries[slot]
            probes &+= 1
            if let member = entry.member, entry.id != excludedID, !passingOver(member) {
                if load(member) == .ready {
                    comebacks &+= 1
                    entry.cameBack = comebacks
                    moveToReady(slot)
                    return member
                }
                if best < 0 || entry.cameBack > entries[best].cameBack { best = slot }
            }
            slot += 1
        }
        if best >= 0, let member = entries[best].member {
            stalledCursor = best + 1
            return member
        }
        // A member passed over can shift into a place a loop above had passed (a busy one's swap): one look at
        // every member settles it, only when nothing else was found.
        for entry in entries where entry.id != excludedID {
            probes &+= 1
            if let member = entry.member, !passingOver(member) { return member }
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

    /// Moves the entry at `slot` (in the busy or stalled part) to the end of the ready part.
    private func moveToReady(_ slot: Int) {
        var slot = slot
        if slot >= stalledStart {
            swapSlots(slot, stalledStart)
            slot = stalledStart
            stalledStart += 1
        }
        swapSlots(slot, ready)
        ready += 1
    }

    /// Swaps two slots, keeping `slotByMember` right.
    private func swapSlots(_ first: Int, _ second: Int) {
        guard first != second else { return }
        entries.swapAt(first, second)
        slotByMember[entries[first].id] = first
        slotByMember[entries[second].id] = second
    }

    /// Removes the entry at `slot`, keeping the three parts contiguous.
    private func removeSlot(_ slot: Int) {
        var slot = slot
        if slot < ready {
            ready -= 1
            swapSlots(slot, ready)
            slot = ready
        }
        if slot < stalledStart {
            stalledStart -= 1
            swapSlots(slot, stalledStart)
            slot = stalledStart
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
