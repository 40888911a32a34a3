/// Something kept in a `PatternList`, which records where it sits for O(1) removal.
protocol PatternListElement: AnyObject {
    var listPosition: Int { get set }
}

/// A dense list that several cursors walk in slices while it changes.
///
/// A dictionary cannot be walked from a saved position across mutations; this list can. Removal swaps the
/// last element into the hole, O(1), except that each cursor past the hole first hands over the element just
/// below it, so that no element slips under a cursor unvisited: O(1 + c log c) for c live cursors (one for the
/// sweep, one per listing in progress).
final class PatternList<Element: PatternListElement> {
    private(set) var elements: ContiguousArray<Element> = []
    private var cursors: [WeakCursor] = []
    private var scratch: [PatternCursor] = []

    var count: Int { elements.count }

    func append(_ element: Element) {
        element.listPosition = elements.count
        elements.append(element)
    }

    /// Removes `element`, keeping every cursor's promise (see `PatternCursor`).
    func remove(_ element: Element) {
        var hole = element.listPosition
        // Cursors past the hole, nearest first: each steps back by one and its last visited element fills the
        // hole, which moves to where that element was (still below the cursors further on).
        collectCursors(past: hole)
        for cursor in scratch {
            cursor.position -= 1
            if cursor.position != hole {
                place(elements[cursor.position], at: hole)
                hole = cursor.position
            }
        }
        scratch.removeAll(keepingCapacity: true)
        let last = elements.count - 1
        if hole != last { place(elements[last], at: hole) }
        elements.removeLast()
    }

    private func place(_ element: Element, at position: Int) {
        elements[position] = element
        element.listPosition = position
    }

    /// Puts the live cursors past `position` in `scratch`, nearest first (reused: removals are frequent).
    private func collectCursors(past position: Int) {
        for entry in cursors {
            if let cursor = entry.cursor, cursor.position > position { scratch.append(cursor) }
        }
        if scratch.count > 1 { scratch.sort { $0.position < $1.position } }
    }

    /// A cursor at the start, kept up to date until `release` or until nothing else holds it.
    func makeCursor() -> PatternCursor {
        cursors.removeAll { $0.cursor == nil }
        let cursor = PatternCursor()
        cursors.append(WeakCursor(cursor: cursor))
        return cursor
    }

    /// Stops keeping `cursor` up to date (its scan is over).
    func release(_ cursor: PatternCursor) {
        cursors.removeAll { $0.cursor == nil || $0.cursor === cursor }
    }

    /// The element at `cursor`, or nil at the end.
    func element(at cursor: PatternCursor) -> Element? {
        cursor.position < elements.count ? elements[cursor.position] : nil
    }
}
