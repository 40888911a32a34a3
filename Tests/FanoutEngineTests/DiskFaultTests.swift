@testable import FanoutHistoryDisk
import Foundation
import Testing

/// The writer's fault seam (`DiskFaults`) and what the writer does with a failure: the segment file cut back to
/// its last whole record, the records counted as failed and written again once writes work, `state` marked.
@Suite("History on disk: faults")
struct DiskFaultTests {
    @Test func theSeamReadsItsItemsAndRefusesOthers() throws {
        #expect(try DiskFaults.parse(nil) == nil)
        #expect(try DiskFaults.parse("") == nil)
        let faults = try #require(try DiskFaults.parse("write=ENOSPC@3x2,sync=EIO@1,tear=4096"))
        #expect(faults.write?.errno == ENOSPC && faults.write?.from == 3 && faults.write?.count == 2)
        #expect(faults.sync?.errno == EIO && faults.sync?.count == Int.max)
        #expect(faults.tearAt == 4096)
        for bad in ["write", "write=ENOSPC", "write=EWHAT@1", "write=ENOSPC@0", "tear=-1", "other=1", "sync=EIO@1x"] {
            #expect(throws: DiskFaultsError.self, "\(bad)") { try DiskFaults.parse(bad) }
        }
        // Writes 3 and 4 fail, the rest go.
        let outcomes = (1...6).map { _ in faults.beforeWrite(length: 10).errno }
        #expect(outcomes == [nil, nil, ENOSPC, ENOSPC, nil, nil])
        #expect(faults.beforeSync() == EIO)
    }

    /// A write that fails in the middle of a segment leaves the file at its last whole record, direct or not,
    /// and the next write follows it: no torn record between two whole ones.
    @Test(arguments: [true, false])
    func aFailedWriteLeavesTheFileAtItsLastRecord(direct: Bool) throws {
        let directory = NSTemporaryDirectory() + "fanout-faults-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let faults = try DiskFaults.parse("write=ENOSPC@2x1")
        var files = SegmentFiles(directory: directory, writesDirect: direct, faults: faults)
        try files.open(1, syncDirectory: false)
        let first = [UInt8](repeating: 1, count: 5000)
        let failed = [UInt8](repeating: 2, count: 7000)
        let third = [UInt8](repeating: 3, count: 3000)
        func append(_ bytes: [UInt8]) throws -> Int {
            try bytes.withUnsafeBytes { try files.append([$0]) }
        }
        _ = try append(first)
        #expect(throws: DiskError.self) { _ = try append(failed) }
        #expect(files.current?.offset == first.count)
        _ = try append(third)
        _ = try files.cutToWritten()
        files.close()
        let contents = try [UInt8](Data(contentsOf: URL(fileURLWithPath: DiskFiles.segmentPath(1, in: directory))))
        #expect(contents == first + third)
    }

    @Test func theStateSaysWhetherACrashKeepsEpochsInBytesOfOneLength() {
        let kept = DiskState(epoch: "abc", clean: false, epochsKept: true)
        let doubted = DiskState(epoch: "abc", clean: false, epochsKept: false)
        #expect(kept.encoded().count == doubted.encoded().count)
        #expect(DiskState(decoding: kept.encoded()) == kept)
        #expect(DiskState(decoding: doubted.encoded()) == doubted)
        // A file of the earlier version, without the line, keeps no epochs.
        let old = DiskState(decoding: Array("fanout-history 1\nepoch abc\nclean 0\n".utf8))
        #expect(old?.epochsKept == false && old?.epoch == "abc")
        #expect(DiskState(decoding: Array("fanout-history 1\nepoch abc\nclean 0\nepochs 2\n".utf8)) == nil)
    }

    /// A record that fails its checksum with a whole record of the segment after it is damage; zeros or a
    /// reused file's older records after it are not.
    @Test func aBadRecordWithAWholeOneAfterItIsDamage() {
        let records = (1...5).flatMap { seq in
            HistoryRecord(seq: UInt64(seq), serial: 1, wallNanoseconds: 0, subject: Array("a.b".utf8),
                          payload: Array("payload-\(seq)".utf8)).encoded(segment: 7)
        }
        let size = records.count / 5
        var damaged = records
        damaged[size + 20] ^= 1
        #expect(damaged.withUnsafeBytes { HistoryRecordReader.holdsRecord(in: $0, segment: 7, after: size) })
        let torn = Array(records[0..<(2 * size)]) + [UInt8](repeating: 0, count: 3 * size)
        #expect(!torn.withUnsafeBytes { HistoryRecordReader.holdsRecord(in: $0, segment: 7, after: 2 * size) })
        // Records of the file's earlier use (another segment id) after the end.
        let reused = Array(records[0..<(2 * size)]) + (3...5).flatMap { seq in
            HistoryRecord(seq: UInt64(seq), serial: 1, wallNanoseconds: 0, subject: Array("a.b".utf8),
                          payload: Array("payload-\(seq)".utf8)).encoded(segment: 3)
        }
        var cut = reused
        cut[2 * size] ^= 0xFF
        #expect(!cut.withUnsafeBytes { HistoryRecordReader.holdsRecord(in: $0, segment: 7, after: 2 * size) })
    }
}
