#if canImport(Glibc)
import Glibc
#endif

/// The publishes the memory engine is numbering now: consecutive ones to one subject, whose place in the
/// sequence table (`Position`) was looked up once, when the run opened.
struct NumberingRun<Position> {
    private(set) var subject: [UInt8] = []
    private(set) var name = ""
    var lastSeq: UInt64 = 0
    private(set) var position: Position?
    private(set) var isOpen = false
    /// Whether the run's messages are kept in history: read per publish, where loading `position` would retain
    /// its log.
    private(set) var records = false
    /// Names the run to the fan-out (`NumberedMessage.run`): a new number for every run, never 0.
    private(set) var serial: UInt64 = 0

    /// Whether the run is open and `candidate` is its subject. memcmp: a generic elementsEqual over the bytes
    /// cost ten times as much. Mutating, so that the engine's check reads the run in place rather than copying
    /// it (and retaining what it holds) first.
    @inline(__always)
    mutating func continues(with candidate: UnsafeRawBufferPointer) -> Bool {
        guard isOpen, candidate.count == subject.count else { return false }
        return subject.withUnsafeBytes { run in
            guard let mine = run.baseAddress, let theirs = candidate.baseAddress else { return candidate.isEmpty }
            return memcmp(mine, theirs, candidate.count) == 0
        }
    }

    /// The next seq of the run's subject.
    @inline(__always)
    mutating func next() -> UInt64 {
        lastSeq &+= 1
        return lastSeq
    }

    mutating func open(_ candidate: UnsafeRawBufferPointer, name: String, lastSeq: UInt64, position: Position,
                       records: Bool) {
        self.records = records
        subject.removeAll(keepingCapacity: true)
        subject.append(contentsOf: candidate)
        self.name = name
        self.lastSeq = lastSeq
        self.position = position
        serial &+= 1
        if serial == 0 { serial = 1 }
        isOpen = true
    }

    mutating func close() {
        position = nil
        records = false
        isOpen = false
    }
}
