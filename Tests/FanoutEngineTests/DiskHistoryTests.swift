@testable import FanoutHistoryDisk
import Foundation
import Testing
@testable import FanoutEngine

/// The record format and its reader, the numbering snapshot, and the engine's history in a directory, without
/// a server.
@Suite("History on disk: records, recovery and segments")
struct DiskHistoryUnitTests {
    @Test func crc32cMatchesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32C.checksumWithTables($0) } == 0xE306_9283)
    }

    /// The instruction and the tables give the same checksum for every length and alignment, and when continued
    /// over pieces, so that records written by either read back with the other.
    @Test func crc32cInstructionAndTablesAgree() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<600).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for start in 0..<9 {
                for count in [0, 1, 7, 8, 9, 63, 64, 135, 591 - start] {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + count)])
                    #expect(CRC32C.checksum(slice) == CRC32C.checksumWithTables(slice), "start \(start), count \(count)")
                }
            }
            let half = UnsafeRawBufferPointer(rebasing: all[0..<300])
            let rest = UnsafeRawBufferPointer(rebasing: all[300..<600])
            #expect(CRC32C.checksum(rest, continuing: CRC32C.checksum(half)) == CRC32C.checksumWithTables(all))
        }
    }

    @Test func recordsCarryAnyBytesAndReadBackWhole() {
        let payloads: [[UInt8]] = [[], [0x0A], [0, 0, 0], Array(0...255), [UInt8](repeating: 0x0A, count: 70_000)]
        var file: [UInt8] = []
        for (index, payload) in payloads.enumerated() {
            file += HistoryRecord(seq: UInt64(index + 1), serial: 7, wallNanoseconds: -5, subject: Array("a.b".utf8),
                                  payload: payload).encoded()
        }
        file.withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw)
            var read: [[UInt8]] = []
            while let record = reader.next() {
                #expect(record.serial == 7 && record.wallNanoseconds == -5 && Array(record.subject) == Array("a.b".utf8))
                #expect(record.seq == UInt64(read.count + 1))
                read.append(Array(record.payload))
            }
            #expect(read == payloads)
            #expect(reader.stop == .end)
        }
    }

    @Test(arguments: [1, 7, 8, 20, 36])
    func aRecordCutShortIsATruncatedTail(keep: Int) {
        let whole = HistoryRecord(seq: 1, serial: 0, wallNanoseconds: 0, subject: [0x61], payload: [1, 2, 3]).encoded()
        let file = whole + whole.prefix(keep)
        file.withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw)
            #expect(reader.next() != nil)
            #expect(reader.next() == nil)
            #expect(reader.stop == .truncated(offset: whole.count))
        }
    }

    @Test func zerosAfterTheLastRecordAreATruncatedTailAndAFlippedByteIsDamage() {
        let whole = HistoryRecord(seq: 1, serial: 0, wallNanoseconds: 0, subject: [0x61], payload: [1, 2, 3]).encoded()
        (whole + [UInt8](repeating: 0, count: 4096)).withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw)
            while reader.next() != nil {}
            #expect(reader.stop == .truncated(offset: whole.count))
        }
        var damaged = whole + whole
        damaged[whole.count + 20] ^= 0x01
        damaged.withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw)
            while reader.next() != nil {}
            #expect(reader.stop == .corrupt(offset: whole.count))
        }
    }

    @Test func theNumberingSnapshotRoundTripsAndRefusesDamage() {
        let snapshot = NumberingSnapshot(serialBase: 9, evictions: 2, entries: [
            .init(subject: "a", last: 5, serial: 0), .init(subject: "orders.eu", last: 1 << 40, serial: 11),
        ])
        var bytes = snapshot.encoded()
        #expect(NumberingSnapshot(decoding: bytes) == snapshot)
        bytes[12] ^= 1
        #expect(NumberingSnapshot(decoding: bytes) == nil)
        #expect(DiskState(decoding: DiskState(epoch: "abc.1", clean: true).encoded()) == DiskState(epoch: "abc.1", clean: true))
    }

    private func temporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-engine-\(UUID().uuidString)")
        return url.path
    }

    private func publish(_ engine: MemoryEngine, _ subject: String, _ payloads: [String]) {
        for payload in payloads { _ = engine.publish(subject, Array(payload.utf8)) }
        engine.endOfRead()
    }

    @Test func segmentsThatNoLongerHoldRetainedMessagesAreDeleted() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rules = [HistoryRule(subjects: "s.>", maxMessages: 10, maxAge: nil)]
        let disk = try HistoryDisk.open(directory: directory, freshEpoch: { "e1" })
        let engine = MemoryEngine(subjectLimit: 100, history: rules, epoch: disk.epoch)
        _ = engine.attach(disk: disk, policy: .no, logger: .init(label: "test"), segmentBytes: 1000)
        // 100-byte payloads: about 7 records per 1000-byte segment; 10 kept, so old segments empty out.
        for round in 0..<20 { publish(engine, "s.a", (0..<10).map { "\(round)-\($0)" + String(repeating: "x", count: 95) }) }
        engine.closeDisk()
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }
        #expect(segments.count <= 3, "\(segments.sorted())")

        let again = try HistoryDisk.open(directory: directory, freshEpoch: { "e2" })
        #expect(again.epoch == "e1" && again.clean)
        let restored = MemoryEngine(subjectLimit: 100, history: rules, epoch: again.epoch)
        _ = restored.attach(disk: again, policy: .no, logger: .init(label: "test"), segmentBytes: 1000)
        #expect(restored.historyFigures.messages == 10)
        let answer = restored.replayNow(ReplayRequest(subject: "s.a", kind: .after(epoch: "e1", seq: 195), budget: 1 << 20))
        #expect(answer.lastSeq == 200 && answer.replayed == 5 && answer.missed == 0)
        restored.closeDisk()
    }

    @Test func aSlowSubjectDoesNotKeepOldSegmentsAlive() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rules = [HistoryRule(subjects: "s.>", maxMessages: 10, maxAge: nil)]
        let disk = try HistoryDisk.open(directory: directory, freshEpoch: { "e1" })
        let engine = MemoryEngine(subjectLimit: 100, history: rules, epoch: disk.epoch)
        _ = engine.attach(disk: disk, policy: .no, logger: .init(label: "test"), segmentBytes: 1000)
        publish(engine, "s.slow", ["the one message"])
        for round in 0..<50 {
            publish(engine, "s.fast", (0..<10).map { "\(round)-\($0)" + String(repeating: "x", count: 95) })
            while engine.expireHistory(budget: 100) {}
        }
        let figures = engine.journal!.ledger
        #expect(figures.diskBytes <= 2 * figures.liveBytes + 2 * figures.segmentBytes + 1000)
        engine.closeDisk()
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }
        #expect(segments.count <= 6, "\(segments.sorted())")

        let again = try HistoryDisk.open(directory: directory, freshEpoch: { "e2" })
        let restored = MemoryEngine(subjectLimit: 100, history: rules, epoch: again.epoch)
        _ = restored.attach(disk: again, policy: .no, logger: .init(label: "test"), segmentBytes: 1000)
        #expect(restored.historyFigures.messages == 11)
        let slow = restored.replayNow(ReplayRequest(subject: "s.slow", kind: .after(epoch: "e1", seq: 0), budget: 1 << 20))
        #expect(slow.lastSeq == 1 && slow.replayed == 1 && slow.missed == 0)
        let fast = restored.replayNow(ReplayRequest(subject: "s.fast", kind: .after(epoch: "e1", seq: 495), budget: 1 << 20))
        #expect(fast.lastSeq == 500 && fast.replayed == 5 && fast.missed == 0)
        restored.closeDisk()
    }
}
