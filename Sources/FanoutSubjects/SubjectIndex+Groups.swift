import FanoutCollections
import FanoutMulticast
import FanoutProtocol

/// Groups (QSUB): a pattern's members may belong to named groups, and a message goes to one member of each
/// group that holds a matching pattern.
///
/// Bound: `join`/`leave` O(1 + 16 trie nodes); `forEachGroup` one hash lookup + ≤ 3,213 trie nodes (as a
/// publish's walk, see `WildcardTrie`) + the matched patterns' groups, and nothing at all while no group
/// exists. Choosing a group's member is `MulticastGroup.pick`, O(1) amortised whatever the group's size.
extension SubjectIndex {
    /// Adds `member` to `group`'s members on `pattern` (a no-op when it is there already).
    public func join(_ member: Member, group: String, pattern: String) {
        let stored = stored(pattern)
        if let existing = stored.groups[group] {
            existing.add(member)
            return
        }
        let made = MulticastGroup<Member>()
        made.add(member)
        if stored.groups.isEmpty {
            groupPatternCount += 1
            groupHolders[pattern] = stored
            if stored.isWildcard {
                groupTrie.insert(pattern, set: stored)
                wildcardGroupPatternCount += 1
            }
        }
        stored.groups[group] = made
        groupSetCount += 1
    }

    /// Removes `member` from `group`'s members on `pattern`; returns whether it was there.
    @discardableResult
    public func leave(_ member: Member, group: String, pattern: String) -> Bool {
        guard let stored = byName[pattern], let members = stored.groups[group] else { return false }
        let removed = members.remove(member)
        if members.storedCount == 0 { dropGroup(group, of: stored) }
        if stored.isUnheld { remove(stored) }
        return removed
    }

    /// The members of `group` on `pattern`, when any are stored.
    public func group(_ group: String, of pattern: String) -> MulticastGroup<Member>? {
        byName[pattern]?.groups[group]
    }

    /// Whether any group holds any pattern.
    @inlinable
    public var hasGroups: Bool { groupPatternCount > 0 }

    /// Calls `body` with the name and members of each group on each stored pattern matching `subject`: a
    /// group that holds several matching patterns comes once per pattern (the caller chooses one member per
    /// group name).
    @inlinable
    public func forEachGroup(of subject: String, _ body: (String, MulticastGroup<Member>) -> Void) {
        guard groupPatternCount > 0 else { return }
        if let stored = byName[subject], !stored.groups.isEmpty {
            for (name, members) in stored.groups { body(name, members) }
        }
        guard wildcardGroupPatternCount > 0 else { return }
        groupTrie.forEachMatch(subject[...]) { stored in
            for (name, members) in stored.groups { body(name, members) }
        }
    }

    /// Each group's member set: its pattern, its group and its live members, in no order, at most `limit`
    /// of them; returns how many there are. O(group member sets) (a listing, not the publish path).
    public func groupListing(limit: Int) -> (total: Int, sets: [(pattern: String, group: String, members: Int)]) {
        var sets: [(pattern: String, group: String, members: Int)] = []
        for (name, stored) in groupHolders {
            for (group, members) in stored.groups where sets.count < limit {
                sets.append((name, group, members.liveCount))
            }
        }
        return (groupSetCount, sets.sorted { ($0.pattern, $0.group) < ($1.pattern, $1.group) })
    }

    func dropGroup(_ group: String, of stored: Pattern) {
        guard stored.groups.removeValue(forKey: group) != nil else { return }
        groupSetCount -= 1
        if stored.groups.isEmpty {
            stored.groups = [:]
            forgetGroups(of: stored)
        }
    }

    /// The pattern holds no group any more: off the group walk.
    func forgetGroups(of stored: Pattern) {
        groupPatternCount -= 1
        groupHolders[stored.name] = nil
        if stored.isWildcard {
            groupTrie.remove(stored.name)
            wildcardGroupPatternCount -= 1
        }
    }

    /// Prunes the dead members of a pattern's groups, dropping the groups left empty.
    func pruneGroups(of stored: Pattern) {
        guard !stored.groups.isEmpty else { return }
        for (name, members) in stored.groups {
            members.prune()
            if members.storedCount == 0 { dropGroup(name, of: stored) }
        }
    }
}
