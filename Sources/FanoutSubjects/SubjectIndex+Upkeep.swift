/// Sweeping and listing in slices: each call does a bounded amount of work from a saved position, so that the
/// loop never stops for a walk over every pattern.
///
/// Work is counted in member entries: a pattern costs its stored members (at least 1), and a call ends once
/// `budget` is spent, having looked at one pattern at least. So a call costs O(budget + the largest set), and a
/// set holds each connection once: it is bounded by the connections, not by the subscriptions.
extension SubjectIndex {
    /// Prunes dead members from the next patterns of the sweep's cycle and forgets the patterns left with none;
    /// returns true when this call finished a cycle over every pattern (the next call starts another).
    @discardableResult
    public func sweepStep(budget: Int) -> Bool {
        var spent = 0
        while spent < budget, let stored = list.element(at: sweepCursor) {
            spent += max(1, stored.allStoredCount)
            stored.set.prune()
            pruneGroups(of: stored)
            if stored.isUnheld {
                remove(stored)  // the last pattern takes its place, still unswept
            } else {
                sweepCursor.position += 1
            }
        }
        guard sweepCursor.position >= list.count else { return false }
        sweepCursor.position = 0
        return true
    }

    /// A whole sweep at once: drops dead members and patterns left with no live member. O(patterns + members),
    /// for tests and tools; the server calls `sweepStep`.
    public func sweep() {
        sweepCursor.position = 0
        sweepStep(budget: .max)
    }

    /// A cursor for `scanPatterns`, at the start of the pattern list. Drop it to abandon the scan.
    public func makePatternCursor() -> PatternCursor {
        list.makeCursor()
    }

    /// Calls `visit` with each next pattern that `allowed` accepts and that has live members, and how many;
    /// returns true when the scan is done (then `cursor` is spent). Call again with the same cursor, on a
    /// later loop pass, until it is. Every pattern stored for the whole scan is offered once; ones added or
    /// removed meanwhile may or may not be. Costs O(budget + the largest set) per call.
    public func scanPatterns(
        from cursor: PatternCursor, budget: Int, where allowed: (String) -> Bool,
        _ visit: (_ pattern: String, _ subscribers: Int) -> Void
    ) -> Bool {
        var spent = 0
        while spent < budget, let stored = list.element(at: cursor) {
            cursor.position += 1
            spent += 1
            guard allowed(stored.name) else { continue }
            spent += stored.allStoredCount
            let live = stored.allLiveCount
            if live > 0 { visit(stored.name, live) }
        }
        guard cursor.position >= list.count else { return false }
        list.release(cursor)
        return true
    }

    /// Live subscribers of exactly `pattern` (0 when none): what a listing filtered by a concrete subject shows,
    /// since a concrete filter matches only itself. One lookup, O(that set).
    public func liveSubscribers(ofPattern pattern: String) -> Int {
        byName[pattern]?.allLiveCount ?? 0
    }

    /// Every pattern with its live subscriber count, in no order. O(patterns + members): for tests and tools;
    /// the server lists with `scanPatterns`.
    public var patterns: [(pattern: String, subscribers: Int)] {
        list.elements.compactMap { stored in
            let live = stored.allLiveCount
            return live > 0 ? (stored.name, live) : nil
        }
    }
}
