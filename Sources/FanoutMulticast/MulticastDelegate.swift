import Synchronization

/// Tokens are numbered across every set, so that a set needs no counter of its own; a token is never handed
/// out twice, which is what makes removing by a stale token safe.
private let lastTokenValue = Atomic<UInt64>(0)

/// A set of members held weakly, each at most once, notified together.
///
/// The multicast-delegate pattern: one source notifies many members; the set never keeps a member alive,
/// so a member that dies simply stops being notified, with no call to remove it. Removal is also possible
/// by member or by the token `add` returned. Members may be added or removed while a notification runs:
/// the notification walks a snapshot and so sees the members present when it started (less any that die).
///
/// Not thread-safe: one thread owns a `MulticastDelegate` (use `LockedMulticastDelegate` to share one).
/// Notification order is unspecified.
///
/// Memory: a server holds one set per subject, and most subjects have one subscriber. A set of one member is
/// a single 40-byte object; more members add an array of entries, searched by a scan up to `indexThreshold`
/// members and through a hash index by member above it, so that large sets stay O(1); the index by token is
/// built only when a large set is first asked to remove by token.
///
/// Open, with every member final, so that an owner can keep its own fields in the set's object: the subject
/// index's patterns do, one allocation per pattern where a pattern and its set took two (112 bytes of
/// malloc's chunks for 80).
open class MulticastDelegate<Member: AnyObject> {
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

    /// Sets with more members than this keep hash indexes; smaller ones are searched by a scan, which is as
    /// fast at this size and saves two hash tables of about 100 bytes each.
    public static var indexThreshold: Int { 16 }

    /// The entries of a set of two or more members.
    @usableFromInline
    final class Many {
        @usableFromInline private(set) var entries: ContiguousArray<Entry>
        /// Where each member's entry is: built when the set first grows past `indexThreshold`, and kept until
        /// the set empties.
        private var slotByMember: [ObjectIdentifier: Int]?
        /// Which member each token names, in an indexed set: built on the first removal by token, so that a set
        /// whose owner never removes by token (the server's subject sets) never pays for it.
        private var memberByToken: [MembershipToken: ObjectIdentifier]?

        init(_ entries: ContiguousArray<Entry>) {
            self.entries = entries
        }

        func slot(of id: ObjectIdentifier) -> Int? {
            if let slotByMember { return slotByMember[id] }
            return entries.firstIndex { $0.id == id }
        }

        func slot(of token: MembershipToken) -> Int? {
            guard let slotByMember else { return entries.firstIndex { $0.token == token } }
            if memberByToken == nil {
                var built: [MembershipToken: ObjectIdentifier] = [:]
                built.reserveCapacity(entries.count)
                for entry in entries { built[entry.token] = entry.id }
                memberByToken = built
            }
            return memberByToken![token].flatMap { slotByMember[$0] }
        }

        func append(_ entry: Entry) {
            entries.append(entry)
            if slotByMember != nil {
                slotByMember![entry.id] = entries.count - 1
                memberByToken?[entry.token] = entry.id
            } else if entries.count > MulticastDelegate.indexThreshold {
                var built: [ObjectIdentifier: Int] = [:]
                for (slot, entry) in entries.enumerated() { built[entry.id] = slot }
                slotByMember = built
            }
        }

        var keepsTokenIndex: Bool { memberByToken != nil }

        /// Swap-removes the entry at `slot`, keeping the indexes right.
        func removeSlot(_ slot: Int) {
            let removed = entries[slot]
            slotByMember?[removed.id] = nil
            memberByToken?[removed.token] = nil
            let last = entries.count - 1
            if slot != last {
                entries[slot] = entries[last]
                slotByMember?[entries[slot].id] = slot
            }
            entries.removeLast()
        }
    }

    /// No member, one (held in `soleMember`, with no entry or array), or more.
    @usableFromInline
    enum Storage {
        case empty
        case one
        case many(Many)
    }

    @usableFromInline
    final private(set) var storage = Storage.empty
    /// The member while the set has exactly one (nil if it died since).
    @usableFromInline
    final weak var soleMember: Member?
    private var soleToken = MembershipToken(value: 0)

    public init() {}

    /// Whether the set keeps an index by token (for tests: only after a removal by token in a large set).
    final var keepsTokenIndex: Bool {
        if case .many(let many) = storage { return many.keepsTokenIndex }
        return false
    }

    private static func makeToken() -> MembershipToken {
        MembershipToken(value: lastTokenValue.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// Adds `member` unless it is already in the set; returns its token either way.
    @discardableResult
    public final func add(_ member: Member) -> MembershipToken {
        let id = ObjectIdentifier(member)
        let fresh = { Entry(member: member, id: id, token: Self.makeToken()) }
        switch storage {
        case .empty:
            return makeSole(member)
        case .one:
            if soleMember === member { return soleToken }
            guard let sole = soleMember else { return makeSole(member) }  // the sole member died: replace it
            let entry = fresh()
            storage = .many(Many([Entry(member: sole, id: ObjectIdentifier(sole), token: soleToken), entry]))
            soleMember = nil
            return entry.token
        case .many(let many):
            if let slot = many.slot(of: id) {
                if many.entries[slot].member === member { return many.entries[slot].token }
                // A dead member whose address has been reused by a new object: retire the old entry first.
                many.removeSlot(slot)
            }
            let entry = fresh()
            many.append(entry)
            return entry.token
        }
    }

    /// Removes `member`; returns false when it was not in the set.
    @discardableResult
    public final func remove(_ member: Member) -> Bool {
        let id = ObjectIdentifier(member)
        switch storage {
        case .empty:
            return false
        case .one:
            guard soleMember === member else { return false }
            clearSole()
            return true
        case .many(let many):
            guard let slot = many.slot(of: id), many.entries[slot].member === member else { return false }
            removeSlot(slot, of: many)
            return true
        }
    }

    /// Removes the membership `token` names; returns false when it is gone already.
    @discardableResult
    public final func remove(_ token: MembershipToken) -> Bool {
        switch storage {
        case .empty:
            return false
        case .one:
            guard soleToken == token else { return false }
            clearSole()
            return true
        case .many(let many):
            guard let slot = many.slot(of: token) else { return false }
            removeSlot(slot, of: many)
            return true
        }
    }

    /// Whether `member` is in the set (and alive, which it is if the caller holds it).
    public final func contains(_ member: Member) -> Bool {
        let id = ObjectIdentifier(member)
        switch storage {
        case .empty:
            return false
        case .one:
            return soleMember === member
        case .many(let many):
            guard let slot = many.slot(of: id) else { return false }
            return many.entries[slot].member === member
        }
    }

    /// Calls `body` for each live member. `body` may add or remove members of this set.
    /// Dead members met on the way are pruned afterwards.
    ///
    /// Inlinable so that callers in other modules get a copy specialised to their member type: the generic
    /// version looks up type metadata on every call, and a server calls this once per published run.
    @inlinable
    public final func notify(_ body: (Member) throws -> Void) rethrows {
        switch storage {
        case .empty:
            return
        case .one:
            if let member = soleMember {
                try body(member)
            } else {
                prune()
            }
        case .many(let many):
            let snapshot = many.entries
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
    }

    /// The live members, as strong references (the caller decides how long to keep them).
    public final var liveMembers: [Member] {
        var result: [Member] = []
        result.reserveCapacity(storedCount)
        notify { result.append($0) }
        return result
    }

    /// Number of entries, including dead members not yet pruned. O(1).
    public final var storedCount: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let many): many.entries.count
        }
    }

    /// Number of live members; prunes the dead. O(n).
    public final var liveCount: Int {
        prune()
        return storedCount
    }

    /// True when some member is alive. Stops at the first live one, pruning the dead before it: O(1) amortised,
    /// where `isEmpty` is O(n).
    public final var hasLiveMember: Bool {
        switch storage {
        case .empty:
            return false
        case .one:
            if soleMember != nil { return true }
            clearSole()
            return false
        case .many(let many):
            while let entry = many.entries.last {
                if entry.member != nil { return true }
                removeSlot(many.entries.count - 1, of: many)
                // Settling may have turned the set into a sole member or none.
                if case .many = storage { continue }
                return self.hasLiveMember
            }
            return false
        }
    }

    /// True when no live member is left; prunes the dead.
    public final var isEmpty: Bool { liveCount == 0 }

    /// Drops the entries of members that have died; returns how many were dropped.
    @discardableResult
    public final func prune() -> Int {
        switch storage {
        case .empty:
            return 0
        case .one:
            guard soleMember == nil else { return 0 }
            clearSole()
            return 1
        case .many(let many):
            var dropped = 0
            var slot = 0
            while slot < many.entries.count {
                if many.entries[slot].member == nil {
                    many.removeSlot(slot)
                    dropped += 1
                } else {
                    slot += 1
                }
            }
            settle(many)
            return dropped
        }
    }

    private func makeSole(_ member: Member) -> MembershipToken {
        soleMember = member
        soleToken = Self.makeToken()
        storage = .one
        return soleToken
    }

    private func clearSole() {
        soleMember = nil
        storage = .empty
    }

    private func removeSlot(_ slot: Int, of many: Many) {
        many.removeSlot(slot)
        settle(many)
    }

    /// Back to no entries when none is left, or to a sole member without an array when one live one is.
    private func settle(_ many: Many) {
        guard many.entries.count <= 1 else { return }
        guard let last = many.entries.first, let member = last.member else {
            storage = .empty
            return
        }
        soleMember = member
        soleToken = last.token
        storage = .one
    }
}
