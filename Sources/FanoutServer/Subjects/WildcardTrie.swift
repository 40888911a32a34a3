import FanoutMulticast

/// A token trie of wildcard patterns. Matching a subject of n tokens visits at most the paths its tokens and
/// `*` branches allow, independent of how many patterns are stored.
final class WildcardTrie<Member: AnyObject> {
    final class Node {
        var children: [Substring: Node] = [:]
        var star: Node?
        /// Members of the pattern that ends at this node.
        var members: MulticastDelegate<Member>?
        /// Members of the pattern that ends at this node's `>` child: one or more further tokens.
        var tail: MulticastDelegate<Member>?

        var isEmpty: Bool { children.isEmpty && star == nil && members == nil && tail == nil }
    }

    private(set) var root = Node()

    /// Places `set` as the member set of `pattern` (a valid pattern with at least one wildcard).
    func insert(_ pattern: String, set: MulticastDelegate<Member>) {
        var node = root
        let tokens = pattern.split(separator: ".", omittingEmptySubsequences: false)
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

    /// Calls `visit` with the set of every stored pattern that matches the concrete `subject`.
    func forEachMatch(_ subject: Substring, _ visit: (MulticastDelegate<Member>) -> Void) {
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        walk(root, tokens, 0, visit)
    }

    private func walk(
        _ node: Node, _ tokens: [Substring], _ index: Int, _ visit: (MulticastDelegate<Member>) -> Void
    ) {
        if index == tokens.count {
            if let members = node.members { visit(members) }
            return
        }
        if let tail = node.tail { visit(tail) }
        if let child = node.children[tokens[index]] { walk(child, tokens, index + 1, visit) }
        if let star = node.star { walk(star, tokens, index + 1, visit) }
    }

    /// Rebuilds the trie from the surviving patterns (used by sweeps, which already walk every set).
    func rebuild(from sets: [String: MulticastDelegate<Member>]) {
        root = Node()
        for (pattern, set) in sets { insert(pattern, set: set) }
    }
}
