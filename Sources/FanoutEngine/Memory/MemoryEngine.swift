/// The embedded engine: numbering in this process's memory, bounded by `subjectLimit`. A restart begins
/// every subject at 1 again.
public final class MemoryEngine: Engine {
    public typealias Position = SequenceTable.Slot

    private var sequences: SequenceTable

    /// Subjects whose numbering is remembered at most (`max_tracked_subjects`); may change on reload, and the
    /// table adapts at its next insertion.
    public var subjectLimit: Int {
        get { sequences.limit }
        set { sequences.limit = newValue }
    }

    public init(subjectLimit: Int) {
        sequences = SequenceTable(limit: subjectLimit)
    }

    public func openRun(subject: String) -> (lastSeq: UInt64, position: Position) {
        let found = sequences.find(subject)
        return (found.last, found.slot)
    }

    public func closeRun(
        subject: String, at position: Position, lastSeq: UInt64, isSubscribed: (String) -> Bool
    ) {
        sequences.store(lastSeq, for: subject, at: position, isSubscribed: isSubscribed)
    }

    public func lastSeq(of subject: String) -> UInt64 {
        sequences.find(subject).last
    }

    public var trackedSubjects: Int { sequences.count }
}
