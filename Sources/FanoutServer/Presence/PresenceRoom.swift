/// The members of one kept subject, in join order: a slot array whose slots are linked oldest to newest, and
/// a dictionary from connection id to slot. Joining and leaving are O(1); listing walks the links from the
/// oldest, O(listed), never the dictionary (Swift dictionaries do not shrink: walking one is O(capacity)).
///
/// Worst case: at most `maxBytesPerMember` (136) bytes per member at the subject's peak (a 48-byte slot, the
/// slot array grown to at most twice its members, and a 12-byte dictionary entry at a load as low as 3/8), plus
/// a group name over 15 bytes held by each of its members, and `maxBytesPerRoom` for the room itself; all of it
/// freed when the subject's last member leaves (the room goes). A connection is a member of a subject at most
/// once, so members ≤ connections. `PresenceMemoryTests` measures both bounds.
final class PresenceRoom {
    struct Member {
        let connectionID: UInt64
        /// When it joined, in nanoseconds after `Presence.origin`.
        let joinedAt: Int64
        /// The server-wide join counter: a closing connection's leaves go out in this order.
        let order: UInt64
        /// The group it is a member with (`QSUB`), nil for a plain subscription.
        let group: String?
        var previous: Int32
        var next: Int32
    }

    /// See the type's comment.
    static let maxBytesPerMember = 2 * MemoryLayout<Member>.stride + 40
    /// The room object, and its two structures' headers and smallest allocations, with one member.
    static let maxBytesPerRoom = 384

    private var slots: ContiguousArray<Member> = []
    /// Free slots, chained through `next`; -1 ends the chain.
    private var freeSlot: Int32 = -1
    private var slotOf: [UInt64: Int32] = [:]
    private var oldest: Int32 = -1
    private var newest: Int32 = -1

    var count: Int { slotOf.count }

    /// Adds the connection as the newest member; false when it is one already.
    func join(_ connectionID: UInt64, at joinedAt: Int64, order: UInt64, group: String?) -> Bool {
        guard slotOf[connectionID] == nil else { return false }
        let member = Member(connectionID: connectionID, joinedAt: joinedAt, order: order, group: group,
                            previous: newest, next: -1)
        let slot: Int32
        if freeSlot >= 0 {
            slot = freeSlot
            freeSlot = slots[Int(slot)].next
            slots[Int(slot)] = member
        } else {
            slot = Int32(slots.count)
            slots.append(member)
        }
        if newest >= 0 { slots[Int(newest)].next = slot } else { oldest = slot }
        newest = slot
        slotOf[connectionID] = slot
        return true
    }

    /// Removes the connection's membership and returns it; nil when it was no member.
    func leave(_ connectionID: UInt64) -> Member? {
        guard let slot = slotOf.removeValue(forKey: connectionID) else { return nil }
        let member = slots[Int(slot)]
        if member.previous >= 0 { slots[Int(member.previous)].next = member.next } else { oldest = member.next }
        if member.next >= 0 { slots[Int(member.next)].previous = member.previous } else { newest = member.previous }
        // The freed slot lets go of its group name.
        slots[Int(slot)] = Member(connectionID: 0, joinedAt: 0, order: 0, group: nil, previous: -1, next: freeSlot)
        freeSlot = slot
        return member
    }

    /// The oldest `limit` members, oldest first.
    func oldestMembers(_ limit: Int) -> [Member] {
        var listed: [Member] = []
        listed.reserveCapacity(min(limit, count))
        var slot = oldest
        while slot >= 0 && listed.count < limit {
            listed.append(slots[Int(slot)])
            slot = slots[Int(slot)].next
        }
        return listed
    }

    /// The heap blocks of the room's two structures (each a single reference), for the bound's test to measure
    /// with `malloc_usable_size`; empty when it has no member (an empty array or dictionary is a shared static
    /// object, not a heap block).
    var storageObjects: [AnyObject] {
        guard count > 0 else { return [] }
        return [unsafeBitCast(slots, to: AnyObject.self), unsafeBitCast(slotOf, to: AnyObject.self)]
    }
}
