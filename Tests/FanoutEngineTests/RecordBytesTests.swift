@testable import FanoutHistoryDisk
import Foundation
import Testing

/// The buffer the loop encodes records into, and its trip to the writer and back.
@Suite("History on disk: record buffers")
struct RecordBytesTests {
    /// Records written into a buffer, across its growth from a small capacity, are byte for byte the array
    /// encoding's.
    @Test func aBufferEncodesRecordsAsAnArrayDoes() {
        let buffer = RecordBytes(capacity: 64)
        var array: [UInt8] = []
        for seq in UInt64(1)...40 {
            append(seq: seq, payloadBytes: Int(seq) * 7, to: buffer, and: &array)
        }
        #expect(Array(buffer.bytes) == array)
        #expect(buffer.capacity >= array.count && buffer.capacity < 2 * array.count)
    }

    /// Three checksums at once agree with one at a time, for every mix of lengths and alignments; sealing
    /// records three at a time gives each the checksum `encoded` gives it alone, for any count of records.
    @Test func threeChecksumsAtOnceAgreeWithOneAtATime() {
        let bytes = (0..<700).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
        bytes.withUnsafeBytes { all in
            for (a, b, c) in [(0, 0, 0), (1, 9, 17), (136, 135, 137), (64, 7, 200), (3, 300, 8)] {
                let pieces = [(5, a), (211, b), (402, c)].map { UnsafeRawBufferPointer(rebasing: all[$0.0..<($0.0 + $0.1)]) }
                let three = CRC32C.checksums(pieces[0], pieces[1], pieces[2], continuing: 0x1234)
                #expect([three.0, three.1, three.2] == pieces.map { CRC32C.checksumWithTables($0, continuing: 0x1234) })
            }
        }
        for count in 0...7 {
            let records = (0..<count).map {
                HistoryRecord(seq: UInt64($0 + 1), serial: 2, wallNanoseconds: 5, subject: Array("s.\($0)".utf8),
                              payload: Array(repeating: UInt8($0), count: 90 + $0 * 13))
            }
            var sealed = records.flatMap { record -> [UInt8] in
                var unsealed = record.encoded(segment: 4)
                unsealed.withUnsafeMutableBytes { $0.storeBytes(of: 0, toByteOffset: 4, as: UInt32.self) }
                return unsealed
            }
            sealed.withUnsafeMutableBytes { HistoryRecord.seal($0, segment: 4) }
            #expect(sealed == records.flatMap { $0.encoded(segment: 4) }, "\(count) records")
        }
    }

    /// The writer hands a written buffer back, emptied, for the loop's next batch; one grown past
    /// `RecordBytesPool.largestKept` by an outsized payload is freed instead. What it wrote reads back whole.
    @Test func theWriterHandsWrittenBuffersBackButNotOutsizedOnes() throws {
        let directory = NSTemporaryDirectory() + "fanout-record-bytes-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = HistoryWriter(directory: directory, policy: .always, maxQueueBytes: 1 << 26, diskBytes: 0,
                                   logger: .init(label: "test"))
        let small = RecordBytes(), outsized = RecordBytes(capacity: 64)
        var expected: [UInt8] = []
        for seq in UInt64(1)...10 { append(seq: seq, payloadBytes: 100, to: small, and: &expected) }
        append(seq: 11, payloadBytes: RecordBytesPool.largestKept, to: outsized, and: &expected)
        var spares: [RecordBytes] = []
        let batches = [EncodedRecords(segment: 1, bytes: small, count: 10), EncodedRecords(segment: 1, bytes: outsized, count: 1)]
        #expect(writer.submit(batches, spares: &spares) == 2 && spares.isEmpty)
        // Under `always`, the writer syncs after handing the buffers back: the count of synced records says when.
        let deadline = ContinuousClock.now + .seconds(20)
        while writer.durableRecords < 11 && ContinuousClock.now < deadline { usleep(1000) }
        #expect(writer.durableRecords == 11)
        #expect(writer.submit([], spares: &spares) == 0)
        #expect(spares.count == 1 && spares.first === small && small.count == 0)
        writer.stop(snapshot: nil, state: DiskState(epoch: "e1", clean: true))

        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: DiskFiles.segmentPath(1, in: directory))))
        HistoryRecord.seal(expected: &expected)
        #expect(written == expected)
    }

    /// The pool keeps buffers up to its byte bound, never an outsized one, lends the loop two at a time, and
    /// keeps two when the writer goes idle.
    @Test func thePoolIsBoundedInBytesAndShrinksWhenIdle() {
        var pool = RecordBytesPool()
        let each = RecordBytes.initialCapacity
        for _ in 0..<(RecordBytesPool.keptBytes / each + 10) { pool.keep(RecordBytes()) }
        #expect(pool.count == RecordBytesPool.keptBytes / each)
        var spares: [RecordBytes] = []
        pool.lend(to: &spares)
        #expect(spares.count == RecordBytesPool.idleCount && pool.count == RecordBytesPool.keptBytes / each - 2)
        pool.keep(RecordBytes(capacity: 2 * RecordBytesPool.largestKept))
        pool.keep(RecordBytes())
        pool.keep(RecordBytes())
        #expect(pool.count == RecordBytesPool.keptBytes / each, "refilled to the bound, the outsized one left out")
        pool.trim()
        #expect(pool.count == RecordBytesPool.idleCount)
    }

    private func append(seq: UInt64, payloadBytes: Int, to buffer: RecordBytes, and array: inout [UInt8]) {
        let subject = Array("s.\(seq)".utf8)
        let payload = (0..<payloadBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        subject.withUnsafeBytes { subject in
            payload.withUnsafeBytes { payload in
                HistoryRecord.appendUnsealed(seq: seq, serial: 3, wallNanoseconds: 9, subject: subject, payload: payload,
                                             to: buffer)
                HistoryRecord.appendUnsealed(seq: seq, serial: 3, wallNanoseconds: 9, subject: subject, payload: payload,
                                             to: &array)
            }
        }
    }
}

extension HistoryRecord {
    /// Seals records encoded into an array, for segment 1.
    fileprivate static func seal(expected bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { seal($0, segment: 1) }
    }
}
