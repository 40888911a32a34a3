import FanoutCollections
import FanoutMulticast
import FanoutProtocol

/// Subject → subscribers, for every pattern some connection has subscribed to.
///
/// Bound: SUB/UNSUB O(1 + 16 trie nodes + open cursors); a publish 1 hash lookup + ≤ 3,213 trie nodes + the
/// matched sets' members; `sweepStep`/`scanPatterns` O(budget + one set); only `sweep()`/`patterns` are O(all).
///
/// Each pattern is a `MulticastDelegate`, which holds its members weakly: a member that dies leaves every
/// set with no call into the index. Its dead entries are skipped at once and swept out later, a slice at a
/// time (`sweepStep`), so that emptied patterns disappear from listings. The other direction, member →
/// patterns, is the caller's to keep with the member (the server's `ClientConnection.subscriptions`), which
/// makes UNSUB and "UNSUB all" cheap.
///
/// Every pattern is in one hash map by name (a concrete subject can only equal a concrete pattern, so a
/// publish needs one lookup) and in a dense list that sweeps and listings walk in slices. Wildcard patterns
/// are also in a token trie, whose walk is bounded by the pattern limits (`WildcardTrie`), not by how many
/// patterns there are. The trie's bound holds for patterns that pass `Subject.wildcardPatternProblem`.
///
/// The publish path's methods are `@inlinable`, with the state they read `@usableFromInline`: the server is
/// another module, and a generic method it cannot inline runs unspecialised, looking up `Member`'s metadata
/// and witness table for every receiver.
public final class SubjectIndex<Member: Subscriber> {
    /// One stored pattern, which is its own set of plain members: one object per subscribed pattern, where a
    /// pattern holding a separate set took two.
    @usableFromInline
    final class Pattern: MulticastDelegate<Member>, PatternListElement {
        let name: String
        /// The groups whose members hold this pattern (QSUB), by group name; empty for most patterns.
        @usableFromInline var groups: [String: MulticastGroup<Member>] = [:]
        // A 32-bit position and the flag after it keep the object in glibc's 80-byte chunks (the set's 40
        // bytes with its header, then 16, 8, 4, 1).
        private var position: Int32 = 0
        let isWildcard: Bool

        var listPosition: Int {
            get { Int(position) }
            set { position = Int32(truncatingIfNeeded: newValue) }
        }

        init(name: String, isWildcard: Bool) {
            self.name = name
            self.isWildcard = isWildcard
        }

        /// The plain members (the pattern itself).
        @inlinable var set: MulticastDelegate<Member> { self }

        /// Neither a plain member nor a group member is stored: the pattern can go.
        var isUnheld: Bool { self.set.storedCount == 0 && groups.isEmpty }

        /// Live subscribers, plain and group members (a connection holds a pattern in one mode only).
        var allLiveCount: Int { groups.values.reduce(self.set.liveCount) { $0 + $1.liveCount } }

        /// Stored entries, dead ones included: what a sweep of this pattern costs.
        var allStoredCount: Int { groups.values.reduce(self.set.storedCount) { $0 + $1.storedCount } }
    }

    @usableFromInline var byName = ShardedDictionary<String, Pattern>()
    let list: PatternList<Pattern>
    @usableFromInline let trie = WildcardTrie<MulticastDelegate<Member>>()
    @usableFromInline var wildcardCount = 0
    /// Wildcard patterns that some group holds, for a publish's choice of one member per group.
    @usableFromInline let groupTrie = WildcardTrie<Pattern>()
    /// Patterns that some group holds; 0 keeps groups off the publish path.
    @usableFromInline var groupPatternCount = 0
    /// The patterns that some group holds, by name: what a listing of groups walks.
    var groupHolders: [String: Pattern] = [:]
    @usableFromInline var wildcardGroupPatternCount = 0
    /// Member sets of groups, one per group and pattern it holds: INFO's `groups`. O(1).
    public internal(set) var groupSetCount = 0
    /// The mark of the latest `forEachReceiver` walk: a member carrying it was visited by that walk.
    public var lastMark: UInt64 = 0
    /// Where the next `sweepStep` starts.
    let sweepCursor: PatternCursor

    public init() {
        list = PatternList()
        sweepCursor = list.makeCursor()
    }

    /// Adds `member` to `pattern`'s set (a no-op when it is there already).
    public func subscribe(_ member: Member, to pattern: String) {
        stored(pattern).set.add(member)
    }

    /// The stored pattern, made (in the map, the list and, for a wildcard, the trie) when new.
    func stored(_ pattern: String) -> Pattern {
        if let stored = byName[pattern] { return stored }
        let isWildcard = Subject.isWildcard(pattern)
        assert(!isWildcard || Subject.wildcardPatternProblem(pattern) == nil, "unchecked pattern \(pattern)")
        let stored = Pattern(name: pattern, isWildcard: isWildcard)
        byName[pattern] = stored
        list.append(stored)
        if isWildcard {
            trie.insert(pattern, set: stored.set)
            wildcardCount += 1
        }
        return stored
    }

    /// Removes `member` from `pattern`'s set; returns whether it was there. A set left with no entry at all
    /// goes at once; one left with only dead members waits for the sweep.
    @discardableResult
    public func unsubscribe(_ member: Member, from pattern: String) -> Bool {
        guard let stored = byName[pattern] else { return false }
        let removed = stored.set.remove(member)
        if stored.isUnheld { remove(stored) }
        return removed
    }

    /// Forgets a pattern: from the map, the list and, for a wildcard, its path in the trie.
    func remove(_ stored: Pattern) {
        if !stored.groups.isEmpty {
            groupSetCount -= stored.groups.count
            stored.groups = [:]
            forgetGroups(of: stored)
        }
        byName[stored.name] = nil
        list.remove(stored)
        if stored.isWildcard {
            trie.remove(stored.name)
            wildcardCount -= 1
        }
    }

    /// The set of `pattern`, when stored.
    func storedSet(of pattern: String) -> MulticastDelegate<Member>? {
        byName[pattern]?.set
    }

    /// Calls `body` once for each live member subscribed to a pattern matching `subject`, however many of
    /// its patterns match. `body` gets the member for the length of the call only, so a caller that keeps
    /// something else (its socket, say) never retains the member itself: a weakly referenced object's
    /// reference count lives in a side table, and each retain or release of it takes the slow path.
    @inlinable
    public func forEachReceiver(of subject: String, _ body: (Member) -> Void) {
        lastMark &+= 1
        let mark = lastMark
        func take(_ set: MulticastDelegate<Member>) {
            set.notify { member in
                if member.deliveryMark != mark {
                    member.deliveryMark = mark
                    body(member)
                }
            }
        }
        if let stored = byName[subject] { take(stored.set) }
        if wildcardCount > 0 { trie.forEachMatch(subject[...], take) }
    }

    /// Appends each live member subscribed to a pattern matching `subject` to `receivers`, once, however
    /// many of its patterns match. Returns how many were appended.
    @inlinable @discardableResult
    public func collectReceivers(of subject: String, into receivers: inout [Member]) -> Int {
        let before = receivers.count
        forEachReceiver(of: subject) { receivers.append($0) }
        return receivers.count - before
    }

    /// Whether anyone is subscribed to a pattern matching `subject`. Stops at the first live member found; the
    /// one allocation is the trie walk's token array, when there are wildcard patterns.
    @inlinable
    public func hasReceivers(for subject: String) -> Bool {
        if let stored = byName[subject], stored.set.hasLiveMember { return true }
        return wildcardCount > 0 && trie.containsMatch(subject[...]) { $0.hasLiveMember }
    }

    /// Number of stored patterns, including ones whose members all died since the sweep last saw them. O(1).
    public var storedPatternCount: Int { list.count }
}
