@testable import FanoutHistoryDisk
import Foundation
import Testing
@testable import FanoutEngine

extension DiskHistoryUnitTests {
    /// A writer queue that is full refuses records and counts them; their messages stay retained in memory.
    /// After a restart, the subject's history is what reached the disk, and a RESUME counts the refused
    /// message in `missed` instead of replaying something else under its seq.
    @Test func recordsAFullWriteQueueRefusesAreCountedAndMissedAfterARestart() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A queue of one byte takes a batch only when empty; the writer naps 10 ms after each one it writes,
        // so the second batch within a nap waits in the queue and the third is refused.
        let (engine, disk) = try engineOnDisk(directory, freshEpoch: "e1", policy: .everysec, writeQueueBytes: 1)
        // The first batch, taken by an empty queue, holds 10 messages: what RESUME asks about below.
        publish(engine, "s.a", (1...10).map { "m\($0)" })
        var last = 10
        while (engine.diskFigures?.writeDropped ?? 0) == 0 && last < 10_000 {
            last += 1
            publish(engine, "s.a", ["m\(last)"])
        }
        #expect(engine.diskFigures?.writeDropped == 1, "the first refusal stops the publishing: message \(last)")
        let seq = UInt64(last)
        let before = engine.replayNow(ReplayRequest(subject: "s.a", kind: .after(epoch: disk.epoch, seq: seq - 5),
                                                    budget: 1 << 20))
        #expect(before.replayed == 5 && before.missed == 0, "the refused message is still retained in memory")
        engine.closeDisk()
        let (restored, again) = try engineOnDisk(directory, freshEpoch: "e2")
        #expect(again.epoch == "e1" && again.clean)
        let after = restored.replayNow(ReplayRequest(subject: "s.a", kind: .after(epoch: "e1", seq: seq - 5), budget: 1 << 20))
        #expect(after.lastSeq == seq, "the numbering goes on from the last seq given out")
        #expect(after.replayed == 4 && after.missed == 1, "replayed \(after.replayed), missed \(String(describing: after.missed))")
        // The four replayed are the four after the client's position: none is sent twice.
        var pushes: [UInt8] = []
        _ = after.stream?.encode(into: &pushes, limit: 1 << 20)
        after.stream?.finish()
        let lines = String(decoding: pushes, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines == ((seq - 4)..<seq).map { "MSG s.a \($0) m\($0)" })
        restored.closeDisk()
    }
}
