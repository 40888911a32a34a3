@testable import FanoutServer
import FanoutTestSupport
import Testing

/// The member table's memory, measured as the allocator's usable size of its heap blocks: the bounds
/// `PresenceRoom` states where it is declared.
@Suite("Presence member table's memory")
struct PresenceMemoryTests {
    private func heapBytes(of room: PresenceRoom) -> Int {
        ([room] + room.storageObjects).reduce(0) { $0 + mallocUsableSize(of: $1) }
    }

    /// 10,000 members joining one subject: at every size from 100 members on (the room's own bytes spread
    /// thin), the bytes per member stay under `maxBytesPerMember`, growth steps included; one member costs
    /// under `maxBytesPerRoom`.
    @Test func bytesPerMemberStayUnderTheStatedBound() {
        let room = PresenceRoom()
        #expect(room.join(1, at: 0, order: 1, group: "g"))
        let single = heapBytes(of: room)
        #expect(single <= PresenceRoom.maxBytesPerRoom, "one member's room takes \(single) bytes")
        var worst = 0.0
        for id in UInt64(2)...10_000 {
            #expect(room.join(id, at: Int64(id), order: id, group: id % 2 == 0 ? "workers" : nil))
            if id >= 100 { worst = max(worst, Double(heapBytes(of: room) - single) / Double(id)) }
        }
        #expect(worst <= Double(PresenceRoom.maxBytesPerMember), "worst \(worst) bytes per member")
        #expect(room.count == 10_000)
    }

    /// Members that leave from anywhere and others that join reuse the freed slots: churn at a steady count does
    /// not grow the table, and the listing stays in join order.
    @Test func churnReusesSlotsAndKeepsJoinOrder() {
        let room = PresenceRoom()
        var expected = Array(UInt64(1)...1000)
        for id in expected { #expect(room.join(id, at: 0, order: id, group: nil)) }
        let settled = heapBytes(of: room)
        var next: UInt64 = 1001
        for round in 0..<50 {
            // 37 members from spread-out places, then 37 newcomers.
            let leaving = (0..<37).map { expected[($0 * 27 + round) % expected.count] }
            for id in Set(leaving) {
                #expect(room.leave(id)?.connectionID == id)
                #expect(room.leave(id) == nil, "a member leaves once")
            }
            expected.removeAll { Set(leaving).contains($0) }
            while expected.count < 1000 {
                #expect(room.join(next, at: 0, order: next, group: nil))
                expected.append(next)
                next += 1
            }
        }
        #expect(heapBytes(of: room) <= settled, "churn grew the table: \(heapBytes(of: room)) > \(settled)")
        #expect(room.oldestMembers(1000).map(\.connectionID) == expected)
        #expect(room.oldestMembers(3).map(\.connectionID) == Array(expected.prefix(3)))
        #expect(!room.join(expected[0], at: 0, order: next, group: nil), "a member joins once")
    }
}
