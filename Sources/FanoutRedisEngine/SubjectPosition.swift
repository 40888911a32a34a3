/// Where a subject's delivery stands on this node: the epoch and seq of the last message handed to its
/// subscribers. Duplicates are told apart by this position, never by seq alone: a message of another epoch
/// is a new numbering, and a seq past the next one is a gap. Both are reported to subscribers (`Reset`).
final class SubjectPosition {
    var epoch: String?
    var lastSeq: UInt64 = 0
    /// Live messages held while the gap after a reconnection is filled from the subject's stream; nil when
    /// nothing is held. At most `RedisEngine.replayBufferLimit`: past it they go out without the fill.
    var catchingUp: [(epoch: String, seq: UInt64, payload: [UInt8])]?

    /// What a message at (`epoch`, `seq`) means here, the position moving on when it is delivered.
    enum Admission: Equatable {
        /// Delivered already (at or below the position in the same epoch): dropped.
        case duplicate
        /// Delivered, after the reset when there is one.
        case deliver(RedisEngine.Reset?)
    }

    func admit(epoch: String, seq: UInt64) -> Admission {
        guard let known = self.epoch else {
            self.epoch = epoch
            lastSeq = seq
            return .deliver(nil)
        }
        if known != epoch {
            // A new numbering: what the old one still held past the position is beyond anyone's count.
            self.epoch = epoch
            lastSeq = seq
            return .deliver(RedisEngine.Reset(epoch: epoch, seq: seq &- 1, missed: nil))
        }
        guard seq > lastSeq else { return .duplicate }
        let missed = seq - lastSeq - 1
        lastSeq = seq
        return .deliver(missed > 0 ? RedisEngine.Reset(epoch: epoch, seq: seq - 1, missed: missed) : nil)
    }
}

/// The positions of subjects that only wildcard subscriptions bring (no exact subject is tracked), so that
/// a restart of their numbering or a gap after an outage is reported for them too.
///
/// Worst case: at most 2 × `capacity` entries (about 3 MB). Lookups and inserts are O(1); past `capacity`
/// new entries the older generation is dropped whole, so a subject idle that long only loses the report of
/// its next gap, never a message.
struct PositionTable {
    static let capacity = 16_384

    private var recent: [String: SubjectPosition] = [:]
    private var older: [String: SubjectPosition] = [:]

    var count: Int { recent.count + older.count }

    /// The subject's position, made when it has none, and the generation dropped to make room (empty when
    /// none was): the caller sends out what its positions still hold, once this call has returned.
    mutating func position(of subject: String) -> (SubjectPosition, dropped: [String: SubjectPosition]) {
        if let known = recent[subject] { return (known, [:]) }
        let position = older.removeValue(forKey: subject) ?? SubjectPosition()
        var gone: [String: SubjectPosition] = [:]
        if recent.count >= Self.capacity {
            gone = older
            older = recent
            recent = [:]
        }
        recent[subject] = position
        return (position, gone)
    }

    mutating func take(_ subject: String) -> SubjectPosition? {
        recent.removeValue(forKey: subject) ?? older.removeValue(forKey: subject)
    }

    mutating func put(_ subject: String, _ position: SubjectPosition) {
        recent[subject] = position
    }

    /// Forgets every position, returning them (their held messages must still go out).
    mutating func removeAll() -> [String: SubjectPosition] {
        var all = older
        all.merge(recent) { _, new in new }
        recent = [:]
        older = [:]
        return all
    }

    func forEach(_ body: (String, SubjectPosition) -> Void) {
        for (subject, position) in older { body(subject, position) }
        for (subject, position) in recent { body(subject, position) }
    }
}
