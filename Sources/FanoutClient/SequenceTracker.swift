/// Follows each subject's sequence numbers and says when one is not the one expected.
///
/// The first number seen for a subject is taken as given (a subscriber joins mid-stream). After that every
/// message should carry the previous number plus one; anything else is a gap: messages missed while
/// disconnected or dropped as a slow consumer, or numbering restarted by a server that lost its state.
public struct SequenceTracker: Sendable {
    public enum Observation: Equatable, Sendable {
        case first
        case inOrder
        /// `expected` was due; `received` came instead.
        case gap(expected: UInt64, received: UInt64)
    }

    private var last: [String: UInt64] = [:]

    public init() {}

    public mutating func observe(subject: String, seq: UInt64) -> Observation {
        let previous = last.updateValue(seq, forKey: subject)
        guard let previous else { return .first }
        return seq == previous &+ 1 ? .inOrder : .gap(expected: previous &+ 1, received: seq)
    }

    /// Forgets subjects matched by `isDropped` (after an UNSUB, whose later resubscription is no gap).
    public mutating func forget(where isDropped: (String) -> Bool) {
        last = last.filter { !isDropped($0.key) }
    }

    public var trackedSubjects: Int { last.count }
}
