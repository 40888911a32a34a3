import FanoutMulticast
import FanoutProtocol

/// Subject → subscribers, for every pattern some connection has subscribed to.
///
/// Each pattern owns a `MulticastDelegate`, which holds its members weakly: a member that dies leaves every
/// set with no call into the index. Its dead entries are skipped at once and swept out later (`sweep`),
/// so that emptied patterns disappear from listings. The other direction, member → patterns, lives with
/// the member (`ClientConnection.subscriptions`), which makes UNSUB and "UNSUB all" cheap.
///
/// Concrete patterns sit in a hash map (one lookup per publish); wildcard patterns in a token trie, whose walk
/// is bounded by the pattern limits (`WildcardTrie`), not by how many patterns there are.
public final class SubjectIndex<Member: Subscriber> {
    private var exact: [String: MulticastDelegate<Member>] = [:]
    private var wildcards: [String: MulticastDelegate<Member>] = [:]
    private let trie = WildcardTrie<Member>()
    private var lastMark: UInt64 = 0

    public init() {}

    /// Adds `member` to `pattern`'s set (a no-op when it is there already).
    public func subscribe(_ member: Member, to pattern: String) {
        if let set = exact[pattern] ?? wildcards[pattern] {
            set.add(member)
            return
        }
        let set = MulticastDelegate<Member>()
        set.add(member)
        if Subject.isWildcard(pattern) {
            wildcards[pattern] = set
            trie.insert(pattern, set: set)
        } else {
            exact[pattern] = set
        }
    }

    /// Removes `member` from `pattern`'s set; returns whether it was there. Emptied sets wait for `sweep`.
    @discardableResult
    public func unsubscribe(_ member: Member, from pattern: String) -> Bool {
        guard let set = exact[pattern] ?? wildcards[pattern] else { return false }
        return set.remove(member)
    }

    /// Calls `body` once for each live member subscribed to a pattern matching `subject`, however many of
    /// its patterns match. `body` gets the member for the length of the call only, so a caller that keeps
    /// something else (its socket, say) never retains the member itself: a weakly referenced object's
    /// reference count lives in a side table, and each retain or release of it takes the slow path.
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
        if let set = exact[subject] { take(set) }
        if !wildcards.isEmpty { trie.forEachMatch(subject[...], take) }
    }

    /// Appends each live member subscribed to a pattern matching `subject` to `receivers`, once, however
    /// many of its patterns match. Returns how many were appended.
    @discardableResult
    public func collectReceivers(of subject: String, into receivers: inout [Member]) -> Int {
        let before = receivers.count
        forEachReceiver(of: subject) { receivers.append($0) }
        return receivers.count - before
    }

    /// Whether anyone is subscribed to a pattern matching `subject`. Stops at the first live member found; the
    /// one allocation is the trie walk's token array, when there are wildcard patterns.
    public func hasReceivers(for subject: String) -> Bool {
        if let set = exact[subject], set.hasLiveMember { return true }
        return !wildcards.isEmpty && trie.containsMatch(subject[...]) { $0.hasLiveMember }
    }

    /// Drops dead members and patterns left with no live member. O(patterns + members); an emptied wildcard
    /// pattern leaves the trie by its own path.
    public func sweep() {
        exact = exact.filter { !$0.value.isEmpty }
        for (pattern, set) in wildcards where set.isEmpty {
            wildcards[pattern] = nil
            trie.remove(pattern)
        }
    }

    /// Every pattern with its live subscriber count. Call `sweep` first for an exact picture.
    public var patterns: [(pattern: String, subscribers: Int)] {
        (exact.map { ($0.key, $0.value.liveCount) } + wildcards.map { ($0.key, $0.value.liveCount) })
            .filter { $0.1 > 0 }
    }

    /// Number of stored patterns, including ones emptied since the last sweep.
    public var storedPatternCount: Int { exact.count + wildcards.count }
}
