import FanoutProtocol

/// A token trie of wildcard patterns, updated in place: inserting or removing a pattern touches only its path.
///
/// Bound: with patterns inside `Subject.maxWildcardPatternTokens` (16) and `Subject.maxStarTokens` (3), a match
/// visits at most Σ_{d≤16} Σ_{k≤3} C(d, k) = 3,213 nodes, however many patterns are stored.
///
/// Why: every node sits at the end of a stored pattern's prefix, so a node the walk for a subject reaches has
/// a path equal to the subject's first d tokens (d ≤ 16) with k ≤ 3 of them replaced by `*`; there are
/// C(d, k) such paths. A `>` pattern is a `tail` on the node before it, checked in O(1) at each visited node.
/// A pattern over the limits (the server refuses them on SUB) still matches correctly, only past the bound.
///
/// The match walk is `@inlinable` so that it is specialised with the index's publish path in the server.
@usableFromInline
final class WildcardTrie<Value: AnyObject> {
    @usableFromInline
    final class Node {
        /// Literal tokens. Keys are slices of the inserted pattern, so a path shares one copy of its text.
        @usableFromInline var children: [Substring: Node] = [:]
        @usableFromInline var star: Node?
        /// What the pattern that ends at this node holds (its member set).
        @usableFromInline var members: Value?
        /// What the pattern that ends at this node's `>` child holds: one or more further tokens.
        @usableFromInline var tail: Value?

        /// No pattern ends here or below: the node can be unlinked.
        var isEmpty: Bool { children.isEmpty && star == nil && members == nil && tail == nil }
    }

    @usableFromInline let root = Node()

    /// Places `set` as the member set of `pattern` (a valid pattern with at least one wildcard).
    func insert(_ pattern: String, set: Value) {
        var node = root
        let tokens = Subject.tokens(of: pattern)
        for (index, token) in tokens.enumerated() {
            if token == ">" && index == tokens.count - 1 {
                node.tail = set
                return
            }
            if token == "*" {
                if node.star == nil { node.star = Node() }
                node = node.star!
            } else if let child = node.children[token] {
                node = child
            } else {
                let child = Node()
                node.children[token] = child
                node = child
            }
        }
        node.members = set
    }

    /// Forgets `pattern`'s set and unlinks the nodes left with nothing below them. O(tokens of `pattern`).
    func remove(_ pattern: String) {
        _ = remove(Subject.tokens(of: pattern), from: 0, at: root)
    }

    /// Removes below `node`; returns whether `node` is empty afterwards.
    private func remove(_ tokens: [Substring], from index: Int, at node: Node) -> Bool {
        if index == tokens.count {
            node.members = nil
        } else if index == tokens.count - 1 && tokens[index] == ">" {
            node.tail = nil
        } else if tokens[index] == "*" {
            if let star = node.star, remove(tokens, from: index + 1, at: star) { node.star = nil }
        } else if let child = node.children[tokens[index]], remove(tokens, from: index + 1, at: child) {
            node.children[tokens[index]] = nil
            // Removing keys keeps a dictionary's storage; the last one gives it back.
            if node.children.isEmpty { node.children = [:] }
        }
        return node.isEmpty
    }

    /// How many nodes the trie holds, the root included. O(nodes): for tests of pruning.
    var nodeCount: Int {
        func count(_ node: Node) -> Int {
            node.children.values.reduce(1) { $0 + count($1) } + (node.star.map(count) ?? 0)
        }
        return count(root)
    }

    /// Calls `visit` with the set of every stored pattern that matches the concrete `subject`; returns how many
    /// nodes the walk visited (at most 3,213 within the pattern limits, see the type's comment).
    @inlinable @discardableResult
    func forEachMatch(_ subject: Substring, _ visit: (Value) -> Void) -> Int {
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        var visits = 0
        _ = walk(root, tokens, 0, &visits) { set in
            visit(set)
            return true
        }
        return visits
    }

    /// Whether `test` holds for the set of some stored pattern matching `subject`; stops at the first.
    @inlinable
    func containsMatch(_ subject: Substring, where test: (Value) -> Bool) -> Bool {
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        var visits = 0
        return !walk(root, tokens, 0, &visits) { !test($0) }
    }

    /// Visits the matches at and below `node`; returns false as soon as `visit` does, to stop the walk.
    @inlinable
    func walk(
        _ node: Node, _ tokens: [Substring], _ index: Int, _ visits: inout Int,
        _ visit: (Value) -> Bool
    ) -> Bool {
        visits += 1
        if index == tokens.count {
            if let members = node.members { return visit(members) }
            return true
        }
        if let tail = node.tail, !visit(tail) { return false }
        if let child = node.children[tokens[index]], !walk(child, tokens, index + 1, &visits, visit) { return false }
        if let star = node.star, !walk(star, tokens, index + 1, &visits, visit) { return false }
        return true
    }
}
