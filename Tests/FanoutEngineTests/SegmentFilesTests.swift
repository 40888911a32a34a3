@testable import FanoutHistoryDisk
import Foundation
import Testing

/// The writer's segment files, written directly (O_DIRECT, in padded blocks) and through the page cache: what
/// a file holds after appends of any sizes, a cut and a reopen is exactly the records, in order.
@Suite("History on disk: segment files")
struct SegmentFilesTests {
    /// Appends of sizes that end anywhere in a block, one larger than the staging buffer, over a reused file's
    /// longer old contents; then a cut and an append to the existing file (whose last block is read back).
    @Test(arguments: [true, false])
    func appendsHoldExactlyTheRecordsWrittenDirectOrNot(direct: Bool) throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files = SegmentFiles(directory: directory, writesDirect: direct)
        try files.open(1, syncDirectory: false)
        _ = try append([pattern(3 * DirectWrites.capacity, seed: 9)], to: &files)
        files.close()
        _ = try files.remove(1)

        try files.open(2, syncDirectory: false)
        let wroteDirect = files.current?.direct != nil
        if direct && !wroteDirect { print("note: \(directory) takes no O_DIRECT; the direct path went untested") }
        if !direct { #expect(!wroteDirect) }
        var expected: [UInt8] = []
        for size in [1, 4095, 4096, 4097, 100, DirectWrites.capacity + 5000, 0, 7, 12_288] {
            let batches = [pattern(size, seed: size), pattern(size / 3, seed: size + 1)]
            expected += batches.joined()
            _ = try append(batches, to: &files)
            #expect(files.current?.offset == expected.count)
        }
        #expect(try files.cutToWritten() > 0)
        files.close()
        #expect(try contents(directory, 2) == expected)

        try files.open(2, syncDirectory: false)
        #expect(files.current?.offset == expected.count)
        #expect((files.current?.direct != nil) == wroteDirect, "the last block read back, direct again")
        let more = [pattern(5000, seed: 77), pattern(10, seed: 78)]
        expected += more.joined()
        _ = try append(more, to: &files)
        _ = try files.cutToWritten()
        files.close()
        #expect(try contents(directory, 2) == expected)
    }

    /// A writer that falls behind writes through the page cache and goes direct again after: the file holds
    /// the records in order across every switch, whatever block each switch falls in.
    @Test func passesThroughTheCacheAndDirectInterleave() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files = SegmentFiles(directory: directory)
        try files.open(1, syncDirectory: false)
        let direct = files.current?.direct != nil
        var expected: [UInt8] = []
        for (index, size) in [5000, 100, 4096, 7, 9000, 4095, 1, 20_000].enumerated() {
            let throughCache = index % 3 == 1
            let batch = pattern(size, seed: index)
            expected += batch
            _ = try append([batch], to: &files, throughCache: throughCache)
            #expect(files.current?.offset == expected.count)
            #expect((files.current?.direct != nil) == (direct && !throughCache), "pass \(index)")
        }
        _ = try files.cutToWritten()
        files.close()
        #expect(try contents(directory, 1) == expected)
    }

    private func append(_ batches: [[UInt8]], to files: inout SegmentFiles, throughCache: Bool = false) throws -> Int {
        let buffers = batches.map { batch -> UnsafeMutableRawBufferPointer in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: batch.count, alignment: 1)
            buffer.copyBytes(from: batch)
            return buffer
        }
        defer { buffers.forEach { $0.deallocate() } }
        return try files.append(buffers.map { UnsafeRawBufferPointer($0) }, throughCache: throughCache)
    }

    /// A new directory under /var/tmp, which lies on a disk where /tmp may be tmpfs (no O_DIRECT before Linux 6.6).
    private func makeDirectory() throws -> String {
        let directory = "/var/tmp/fanout-segment-files-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    private func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) ^ seed) | 1 }
    }

    private func contents(_ directory: String, _ id: UInt32) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: DiskFiles.segmentPath(id, in: directory))))
    }
}
