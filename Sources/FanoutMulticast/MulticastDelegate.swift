/// A set of members held weakly, each at most once, notified together.
///
/// The multicast-delegate pattern: one source notifies many members; the set never keeps a member alive,
/// so a member that dies simply stops being notified, with no call to remove it. Removal is also possible
/// by member or by the token `add` returned. Members may be added or removed while a notification runs:
/// the notification walks a snapshot and so sees the members present when it started (less any that die).
///
/// Not thread-safe: one thread owns a `MulticastDelegate` (use `LockedMulticastDelegate` to share one).
/// Notification order is unspecified.
public final class MulticastDelegate<Member: AnyObject> {
    /// A class rather than a struct: a weak reference in a struct is copied out (a weak-reference copy and
    /// destroy) before it can be loaded, and the publish path loads one per subscriber per run.
    @usableFromInline
    final class Entry {
        @usableFromInline weak var member: Member?
        let id: ObjectIdentifier
        let token: MembershipToken

        init(member: Member, id: ObjectIdentifier, token: MembershipToken) {
            self.member = member
            self.id = id
            self.token = token
        }
    }

    @usableFromInline
    private(set) var entries: ContiguousArray<Entry> = []
    /// Where each member's entry is in `entries`, for dedupe and O(1) removal.
    private var slotByMember: [ObjectIdentifier: Int] = [:]
    private var memberByToken: [MembershipToken: ObjectIdentifier] = [:]
    private var nextToken: UInt64 = 1

    public init() {}

    /// Adds `member` unless it is already in the set; returns its token either way.
    @discardableResult
    public func add(_ member: Member) -> MembershipToken {
        let id = ObjectIdentifier(member)
        if let slot = slotByMember[id] {
            if entries[slot].member === member { return entries[slot].token }
            // A dead member whose address has been reused by a new object: retire the old entry first.
            removeSlot(slot)
        }
        let token = MembershipToken(value: nextToken)
        nextToken += 1
        slotByMember[id] = entries.count
        memberByToken[token] = id
        entries.append(Entry(member: member, id: id, token: token))
        return token
    }

    /// Removes `member`; returns false when it was not in the set.
    @discardableResult
    public func remove(_ member: Member) -> Bool {
        guard let slot = slotByMember[ObjectIdentifier(member)], entries[slot].member === member else {
            return false
        }
        removeSlot(slot)
        return true
    }

    /// Removes the membership `token` names; returns false when it is gone already.
    @discardableResult
    public func remove(_ token: MembershipToken) -> Bool {
        guard let id = memberByToken[token], let slot = slotByMember[id] else { return false }
        removeSlot(slot)
        return true
    }

    /// Whether `member` is in the set (and alive, which it is if the caller holds it).
    public func contains(_ member: Member) -> Bool {
        guard let slot = slotByMember[ObjectIdentifier(member)] else { return false }
        return entries[slot].member === member
    }

    /// Calls `body` for each live member. `body` may add or remove members of this set.
    /// Dead members met on the way are pruned afterwards.
    ///
    /// Inlinable so that callers in other modules get a copy specialised to their member type: the generic
    /// version looks up type metadata on every call, and a server calls this once per published run.
    @inlinable
    public func notify(_ body: (Member) throws -> Void) rethrows {
        let snapshot = entries
        var sawDead = false
        for entry in snapshot {
            if let member = entry.member {
                try body(member)
            } else {
                sawDead = true
            }
        }
        if sawDead { prune() }
    }

    /// The live members, as strong references (the caller decides how long to keep them).
    public var liveMembers: [Member] {
        var result: [Member] = []
        result.reserveCapacity(entries.count)
        notify { result.append($0) }
        return result
    }

    /// Number of entries, including dead members not yet pruned. O(1).
    public var storedCount: Int { entries.count }

    /// Number of live members; prunes the dead. O(n).
    public var liveCount: Int {
        prune()
        return entries.count
    }

    /// True when some member is alive. Stops at the first live one, pruning the dead before it: O(1) amortised,
    /// where `isEmpty` is O(n).
    public var hasLiveMember: Bool {
        while let entry = entries.last {
            if entry.member != nil { return true }
            removeSlot(entries.count - 1)
        }
        return false
    }

    /// True when no live member is left; prunes the dead.
    public var isEmpty: Bool { liveCount == 0 }

    /// Drops the entries of members that have died; returns how many were dropped.
    @discardableResult
    public func prune() -> Int {
        var dropped = 0
        var slot = 0
        while slot < entries.count {
            if entries[slot].member == nil {
                removeSlot(slot)
                dropped += 1
            } else {
                slot += 1
            }
        }
        return dropped
    }

    /// Swap-removes the entry at `slot`, keeping both indexes right.
    private func removeSlot(_ slot: Int) {
        let removed = entries[slot]
        slotByMember[removed.id] = nil
        memberByToken[removed.token] = nil
        let last = entries.count - 1
        if slot != last {
            entries[slot] = entries[last]
            slotByMember[entries[slot].id] = slot
        }
        entries.removeLast()
    }
}
