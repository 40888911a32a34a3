@testable import FanoutServer
import Testing

@Suite("Question table")
struct QuestionTableTests {
    /// Each asked connection answers or vanishes once; one never asked does neither.
    @Test func anAskedConnectionSettlesOnce() {
        var asked = AskedConnections(ids: [42, 7, 19, 3])
        #expect(asked.count == 4)
        #expect(asked.isSilent(7) && asked.isSilent(42) && !asked.isSilent(8))
        let results = [
            asked.settle(19, as: .answered), asked.settle(19, as: .answered), asked.settle(19, as: .gone),
            asked.settle(3, as: .gone), asked.settle(3, as: .answered),
            asked.settle(5, as: .answered), asked.settle(100, as: .gone), asked.settle(0, as: .gone),
        ]
        // Answered once, then neither answered again nor gone; gone once, then answering nothing; never asked.
        #expect(results == [true, false, false, true, false, false, false, false])
        #expect(asked.isSilent(42) && asked.isSilent(7) && !asked.isSilent(19) && !asked.isSilent(3))
        var nobody = AskedConnections()
        let taken = nobody.settle(1, as: .answered)
        #expect(nobody.count == 0 && !taken)
    }

    /// An id is `<prefix>.<number>` and names its number back; leading zeros name the same number, and an id
    /// of another prefix, or without digits, names none.
    @Test func idsNameTheirNumbers() {
        let table = QuestionNumbering()
        for number: UInt64 in [1, 9, 10, 12345, UInt64.max] {
            let id = table.id(of: number).string
            #expect(id == "\(table.prefix).\(number)")
            #expect(id.utf8.count <= 64)
            #expect(self.number(of: id, in: table) == number)
        }
        #expect(number(of: "\(table.prefix).007", in: table) == 7)
        #expect(number(of: "\(table.prefix).", in: table) == nil)
        #expect(number(of: "\(table.prefix)", in: table) == nil)
        #expect(number(of: "\(table.prefix)x7", in: table) == nil)
        #expect(number(of: "\(table.prefix).7x", in: table) == nil)
        #expect(number(of: "zzzzzzzzz.7", in: table) == nil)
        #expect(number(of: "never.1", in: table) == nil)
    }

    private func number(of id: String, in table: QuestionNumbering) -> UInt64? {
        var id = id
        return id.withUTF8 { table.number(of: UnsafeRawBufferPointer($0)) }
    }
}
