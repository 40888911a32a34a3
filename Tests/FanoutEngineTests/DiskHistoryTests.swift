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
                                  payload: payload).encoded(segment: 1)
        }
        file.withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw, segment: 1)
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
        let whole = HistoryRecord(seq: 1, serial: 0, wallNanoseconds: 0, subject: [0x61], payload: [1, 2, 3]).encoded(segment: 1)
        let file = whole + whole.prefix(keep)
        file.withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw, segment: 1)
            #expect(reader.next() != nil)
            #expect(reader.next() == nil)
            #expect(reader.stop == .truncated(offset: whole.count))
        }
    }

    @Test func zerosAfterTheLastRecordAreATruncatedTailAndAFlippedByteIsDamage() {
        let whole = HistoryRecord(seq: 1, serial: 0, wallNanoseconds: 0, subject: [0x61], payload: [1, 2, 3]).encoded(segment: 1)
        (whole + [UInt8](repeating: 0, count: 4096)).withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw, segment: 1)
            while reader.next() != nil {}
            #expect(reader.stop == .truncated(offset: whole.count))
        }
        var damaged = whole + whole
        damaged[whole.count + 20] ^= 0x01
        damaged.withUnsafeBytes { raw in
            var reader = HistoryRecordReader(raw, segment: 1)
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

    func temporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-engine-\(UUID().uuidString)")
        return url.path
    }

    /// A memory engine keeping 10 messages of `s.>` in `directory`, in segments of 1,000 bytes.
    func engineOnDisk(_ directory: String, freshEpoch: String, policy: FsyncPolicy = .no,
                      writeQueueBytes: Int = MemoryEngine.writeQueueBytes) throws -> (engine: MemoryEngine, disk: HistoryDisk) {
        let disk = try HistoryDisk.open(directory: directory, freshEpoch: { freshEpoch })
        let rules = [HistoryRule(subjects: "s.>", maxMessages: 10, maxAge: nil)]
        let engine = MemoryEngine(subjectLimit: 100, history: rules, epoch: disk.epoch)
        _ = engine.attach(disk: disk, policy: policy, logger: .init(label: "test"), segmentBytes: 1000,
                          writeQueueBytes: writeQueueBytes)
        return (engine, disk)
    }

    func publish(_ engine: MemoryEngine, _ subject: String, _ payloads: [String]) {
        for payload in payloads { _ = engine.publish(subject, Array(payload.utf8)) }
        engine.endOfRead()
    }

    @Test func segmentsThatNoLongerHoldRetainedMessagesAreDeleted() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (engine, _) = try engineOnDisk(directory, freshEpoch: "e1", policy: .no)
        // 100-byte payloads: about 7 records per 1000-byte segment; 10 kept, so old segments empty out.
        for round in 0..<20 { publish(engine, "s.a", (0..<10).map { "\(round)-\($0)" + String(repeating: "x", count: 95) }) }
        engine.closeDisk()
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }
        #expect(segments.count <= 3, "\(segments.sorted())")

        let (restored, again) = try engineOnDisk(directory, freshEpoch: "e2")
        #expect(again.epoch == "e1" && again.clean)
        #expect(restored.historyFigures.messages == 10)
        let answer = restored.replayNow(ReplayRequest(subject: "s.a", kind: .after(epoch: "e1", seq: 195), budget: 1 << 20))
        #expect(answer.lastSeq == 200 && answer.replayed == 5 && answer.missed == 0)
        restored.closeDisk()
    }

    @Test func aSlowSubjectDoesNotKeepOldSegmentsAlive() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (engine, _) = try engineOnDisk(directory, freshEpoch: "e1", policy: .no)
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

        let (restored, _) = try engineOnDisk(directory, freshEpoch: "e2")
        #expect(restored.historyFigures.messages == 11)
        let slow = restored.replayNow(ReplayRequest(subject: "s.slow", kind: .after(epoch: "e1", seq: 0), budget: 1 << 20))
        #expect(slow.lastSeq == 1 && slow.replayed == 1 && slow.missed == 0)
        let fast = restored.replayNow(ReplayRequest(subject: "s.fast", kind: .after(epoch: "e1", seq: 495), budget: 1 << 20))
        #expect(fast.lastSeq == 500 && fast.replayed == 5 && fast.missed == 0)
        restored.closeDisk()
    }

    /// A record's checksum covers its segment's id: the same bytes in another segment's file are not a record.
    @Test func aRecordReadsOnlyInTheSegmentItWasWrittenFor() {
        let record = HistoryRecord(seq: 1, serial: 0, wallNanoseconds: 0, subject: [0x61], payload: [1, 2, 3])
        record.encoded(segment: 1).withUnsafeBytes { raw in
            var own = HistoryRecordReader(raw, segment: 1)
            #expect(own.next() != nil && own.stop == .end)
            var other = HistoryRecordReader(raw, segment: 2)
            #expect(other.next() == nil && other.stop == .corrupt(offset: 0))
        }
    }

    /// Emptied segments are kept as the spare and written over for the next segment; each segment file then
    /// holds exactly its own records (a reused file is cut to them), whatever the old file held past them.
    @Test func anEmptiedSegmentIsReusedAndCutToItsRecords() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (engine, _) = try engineOnDisk(directory, freshEpoch: "e1", policy: .everysec)
        // Payload lengths vary, so that a reused file's old records never line up with the new ones.
        var seq = 0
        for round in 0..<30 {
            publish(engine, "s.a", (0..<7).map { _ in
                seq += 1
                return String(repeating: "x", count: 20 + (seq * 37) % 150)
            })
            if round == 15 { while engine.expireHistory(budget: 100) {} }
        }
        engine.closeDisk()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains("spare"), "an emptied segment was kept for reuse: \(names.sorted())")
        for name in names where name.hasSuffix(".seg") {
            let id = try #require(UInt32(name.dropLast(4), radix: 16))
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            bytes.withUnsafeBytes { raw in
                var reader = HistoryRecordReader(raw, segment: id)
                while reader.next() != nil {}
                #expect(reader.stop == .end, "\(name): \(String(describing: reader.stop))")
            }
        }
        let (restored, again) = try engineOnDisk(directory, freshEpoch: "e2")
        #expect(again.epoch == "e1" && again.clean && !again.damaged)
        #expect(try !FileManager.default.contentsOfDirectory(atPath: directory).contains("spare"))
        let answer = restored.replayNow(ReplayRequest(subject: "s.a", kind: .after(epoch: "e1", seq: 200), budget: 1 << 20))
        #expect(answer.lastSeq == 210 && answer.replayed == 10 && answer.missed == 0)
        restored.closeDisk()
    }

    /// After a crash, the last segment may end in bytes of a reused file's earlier use: they are cut as a torn
    /// tail, not taken for damage. After a clean stop the same bytes are damage.
    @Test(arguments: [false, true])
    func oldBytesAfterTheLastSegmentsRecordsAreATornTailOnlyAfterACrash(clean: Bool) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let segment = directory + "/" + "0000000000000001.seg"
        let mine = HistoryRecord(seq: 1, serial: 0, wallNanoseconds: 0, subject: Array("s.a".utf8), payload: [1, 2, 3])
        let old = HistoryRecord(seq: 9, serial: 0, wallNanoseconds: 0, subject: Array("s.a".utf8), payload: [7, 7, 7, 7])
        // A whole record of the file's earlier use, lined up with the new ones: only its checksum tells.
        let bytes = mine.encoded(segment: 1) + old.encoded(segment: 0)
        try Data(bytes).write(to: URL(fileURLWithPath: segment))
        try Data(DiskState(epoch: "e1", clean: clean).encoded()).write(to: URL(fileURLWithPath: directory + "/state"))
        if clean {
            let snapshot = NumberingSnapshot(serialBase: 0, evictions: 0, entries: [.init(subject: "s.a", last: 1, serial: 0)])
            try Data(snapshot.encoded()).write(to: URL(fileURLWithPath: directory + "/numbering"))
        }
        let disk = try HistoryDisk.open(directory: directory, freshEpoch: { "e2" })
        #expect(disk.damaged == clean)
        if clean {
            #expect(disk.notes.contains { $0.contains("damaged record") })
        } else {
            #expect(disk.notes.contains { $0.contains("cut \(bytes.count - mine.encoded(segment: 1).count) bytes") }, "\(disk.notes)")
            var records = 0
            disk.forEachRecord { _, _, _ in records += 1 }
            #expect(records == 1)
        }
    }
}
