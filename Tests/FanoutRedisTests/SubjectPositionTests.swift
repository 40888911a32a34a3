@testable import FanoutRedisEngine
import Testing

/// A node's position per subject: duplicates by position within an epoch, never by seq alone.
struct SubjectPositionTests {
    @Test func consecutiveMessagesPassAndRepeatsAreDuplicates() {
        let position = SubjectPosition()
        #expect(position.admit(epoch: "e.1", seq: 7) == .deliver(nil))
        #expect(position.admit(epoch: "e.1", seq: 8) == .deliver(nil))
        #expect(position.admit(epoch: "e.1", seq: 8) == .duplicate)
        #expect(position.admit(epoch: "e.1", seq: 3) == .duplicate)
    }

    @Test func aGapIsCountedExactly() {
        let position = SubjectPosition()
        _ = position.admit(epoch: "e.1", seq: 10)
        #expect(position.admit(epoch: "e.1", seq: 14) == .deliver(RedisEngine.Reset(epoch: "e.1", seq: 13, missed: 3)))
        #expect(position.lastSeq == 14)
    }

    /// The reported cut-off: a shard back from an older snapshot numbers again from below what was delivered.
    /// Under another epoch that is a new numbering, not a run of duplicates.
    @Test func aLowerSeqOfAnotherEpochIsANewNumbering() {
        let position = SubjectPosition()
        _ = position.admit(epoch: "old.1", seq: 1560)
        #expect(position.admit(epoch: "new.1", seq: 360) == .deliver(RedisEngine.Reset(epoch: "new.1", seq: 359, missed: nil)))
        #expect(position.admit(epoch: "new.1", seq: 361) == .deliver(nil))
        #expect(position.admit(epoch: "old.1", seq: 1561) == .deliver(RedisEngine.Reset(epoch: "old.1", seq: 1560, missed: nil)))
    }

    /// The table's stated bound: at most twice its capacity, whatever number of subjects passes through.
    @Test func thePositionTableStaysWithinTwiceItsCapacity() {
        var table = PositionTable()
        var dropped = 0
        for number in 0..<(PositionTable.capacity * 5 + 7) {
            dropped += table.position(of: "s.\(number)").dropped.count
            #expect(table.count <= 2 * PositionTable.capacity)
        }
        #expect(dropped > 0)
        // A subject seen recently keeps its position object.
        let kept = table.position(of: "s.x").0
        #expect(table.position(of: "s.x").0 === kept)
    }
}
