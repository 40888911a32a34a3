/// The known name a mistyped one was probably meant to be, by edit distance (one letter dropped, doubled,
/// swapped or wrong counts one edit each).
public enum NearestName {
    /// The closest of `known` to `name`, if it is within a third of the name's length (at least 2 edits).
    public static func find(_ name: String, among known: [String]) -> String? {
        let typed = Array(name.lowercased().utf8)
        let allowed = max(2, typed.count / 3)
        var best: (name: String, distance: Int)?
        for candidate in known {
            let distance = editDistance(typed, Array(candidate.lowercased().utf8))
            if distance <= allowed, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Damerau-Levenshtein distance (optimal string alignment): an adjacent swap is one edit.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousRow: [Int] = []
        var row = Array(0...b.count)
        for i in 1...a.count {
            let beforeRow = previousRow
            previousRow = row
            row = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let substitution = previousRow[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                row[j] = min(previousRow[j] + 1, row[j - 1] + 1, substitution)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    row[j] = min(row[j], beforeRow[j - 2] + 1)
                }
            }
        }
        return row[b.count]
    }
}
