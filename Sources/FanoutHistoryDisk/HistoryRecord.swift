/// One retained message as it lies in a segment file. Length-prefixed and checksummed, never line-based: a
/// payload may hold any bytes (BPUB), LF and NUL included.
///
/// ```
/// u32 body length | u32 CRC-32C of the segment's id (u32) and the body | body:
///   u8 kind (1) | u64 seq | u64 numbering serial | i64 wall-clock ns | u16 subject length | subject | payload
/// ```
/// Integers are little-endian. The serial is the subject's numbering serial (its epoch's suffix), so that a
/// recovery that keeps epochs can give the subject the very epoch it had. The checksum covers the id of the
/// segment the record was written to: a segment file is reused for a later segment (`SegmentFiles`), and a
/// record left from its earlier use never reads as one of the later segment's.
public struct HistoryRecord: Equatable, Sendable {
    public var seq: UInt64
    public var serial: UInt64
    public var wallNanoseconds: Int64
    public var subject: [UInt8]
    public var payload: [UInt8]

    public init(seq: UInt64, serial: UInt64, wallNanoseconds: Int64, subject: [UInt8], payload: [UInt8]) {
        self.seq = seq
        self.serial = serial
        self.wallNanoseconds = wallNanoseconds
        self.subject = subject
        self.payload = payload
    }

    static let kindMessage: UInt8 = 1
    /// Length and checksum.
    public static let headerBytes = 8
    /// Kind, seq, serial, time and subject length.
    static let fixedBodyBytes = 1 + 8 + 8 + 8 + 2
    /// The largest body a reader accepts: a payload of the longest line max_line allows (64 MiB) and the
    /// longest subject; a larger length is damage, not a record.
    public static let maxBodyBytes = (64 << 20) + fixedBodyBytes + maxSubjectBytes
    /// A subject's length is 16 bits.
    public static let maxSubjectBytes = Int(UInt16.max)

    /// Bytes the record takes on disk.
    public static func size(subjectBytes: Int, payloadBytes: Int) -> Int {
        headerBytes + fixedBodyBytes + subjectBytes + payloadBytes
    }

    /// Appends the encoded record to `out`.
    public static func append(seq: UInt64, serial: UInt64, wallNanoseconds: Int64, subject: UnsafeRawBufferPointer,
                              payload: UnsafeRawBufferPointer, segment: UInt32, to out: inout [UInt8]) {
        let start = out.count
        appendUnsealed(seq: seq, serial: serial, wallNanoseconds: wallNanoseconds, subject: subject, payload: payload,
                       to: &out)
        out.withUnsafeMutableBytes { seal(UnsafeMutableRawBufferPointer(rebasing: $0[start...]), segment: segment) }
    }

    /// Appends the record with its checksum left 0: the loop encodes, and the writer's thread seals (`seal`),
    /// so that the checksum costs the loop nothing.
    @inline(__always)
    public static func appendUnsealed(seq: UInt64, serial: UInt64, wallNanoseconds: Int64,
                                      subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                                      to out: RecordBytes) {
        let at = out.claim(size(subjectBytes: subject.count, payloadBytes: payload.count))
        writeUnsealed(seq: seq, serial: serial, wallNanoseconds: wallNanoseconds, subject: subject, payload: payload,
                      at: at)
    }

    static func appendUnsealed(seq: UInt64, serial: UInt64, wallNanoseconds: Int64, subject: UnsafeRawBufferPointer,
                               payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: size(subjectBytes: subject.count, payloadBytes: payload.count)))
        out.withUnsafeMutableBytes { bytes in
            writeUnsealed(seq: seq, serial: serial, wallNanoseconds: wallNanoseconds, subject: subject,
                          payload: payload, at: bytes.baseAddress! + start)
        }
    }

    /// Lays the record out at `at`, which has room for all of it (`size`).
    @inline(__always)
    private static func writeUnsealed(seq: UInt64, serial: UInt64, wallNanoseconds: Int64,
                                      subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                                      at: UnsafeMutableRawPointer) {
        let body = fixedBodyBytes + subject.count + payload.count
        at.storeBytes(of: UInt32(body).littleEndian, as: UInt32.self)
        at.storeBytes(of: 0, toByteOffset: 4, as: UInt32.self)
        at.storeBytes(of: kindMessage, toByteOffset: 8, as: UInt8.self)
        at.storeBytes(of: seq.littleEndian, toByteOffset: 9, as: UInt64.self)
        at.storeBytes(of: serial.littleEndian, toByteOffset: 17, as: UInt64.self)
        at.storeBytes(of: UInt64(bitPattern: wallNanoseconds).littleEndian, toByteOffset: 25, as: UInt64.self)
        at.storeBytes(of: UInt16(subject.count).littleEndian, toByteOffset: 33, as: UInt16.self)
        let fields = at + headerBytes + fixedBodyBytes
        if let source = subject.baseAddress { fields.copyMemory(from: source, byteCount: subject.count) }
        if let source = payload.baseAddress { (fields + subject.count).copyMemory(from: source, byteCount: payload.count) }
    }

    /// The checksum's start for records of segment `segment`: the CRC of its id.
    static func checksumSeed(segment: UInt32) -> UInt32 {
        withUnsafeBytes(of: segment.littleEndian) { CRC32C.checksum($0) }
    }

    /// Fills in the checksum of every record in `records` (whole records, as `appendUnsealed` made them), for
    /// segment `segment`: three records at a time (`CRC32C.checksums`), since one short record's chain of
    /// crc32 instructions leaves the unit waiting on each result.
    public static func seal(_ records: UnsafeMutableRawBufferPointer, segment: UInt32) {
        let seed = checksumSeed(segment: segment)
        var walk = RecordWalk(records: UnsafeRawBufferPointer(records))
        while let first = walk.next() {
            guard let second = walk.next() else {
                store(CRC32C.checksum(first.body, continuing: seed), in: records, at: first.start)
                break
            }
            guard let third = walk.next() else {
                store(CRC32C.checksum(first.body, continuing: seed), in: records, at: first.start)
                store(CRC32C.checksum(second.body, continuing: seed), in: records, at: second.start)
                break
            }
            let crcs = CRC32C.checksums(first.body, second.body, third.body, continuing: seed)
            store(crcs.0, in: records, at: first.start)
            store(crcs.1, in: records, at: second.start)
            store(crcs.2, in: records, at: third.start)
        }
    }

    private static func store(_ crc: UInt32, in records: UnsafeMutableRawBufferPointer, at start: Int) {
        records.storeBytes(of: crc.littleEndian, toByteOffset: start + 4, as: UInt32.self)
    }

    /// Whole records one after another, each as where it starts and its body (what its checksum covers).
    private struct RecordWalk {
        let records: UnsafeRawBufferPointer
        var offset = 0

        mutating func next() -> (start: Int, body: UnsafeRawBufferPointer)? {
            guard offset + headerBytes <= records.count else { return nil }
            let start = offset
            let body = Int(records.loadUnaligned(fromByteOffset: start, as: UInt32.self).littleEndian)
            offset = min(start + headerBytes + body, records.count)
            return (start, UnsafeRawBufferPointer(rebasing: records[(start + headerBytes)..<offset]))
        }
    }

    /// The record as it lies in segment `segment`.
    public func encoded(segment: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        subject.withUnsafeBytes { subject in
            payload.withUnsafeBytes { payload in
                Self.append(seq: seq, serial: serial, wallNanoseconds: wallNanoseconds, subject: subject,
                            payload: payload, segment: segment, to: &out)
            }
        }
        return out
    }
}

/// Reads records out of a segment's bytes, one at a time, and says exactly where and how they stop. Pure: no
/// I/O, fuzzed (Fuzz/, target `history-record`).
public struct HistoryRecordReader {
    /// A record's fields, as views into the bytes being read (valid while those bytes are).
    public struct View {
        public let seq: UInt64
        public let serial: UInt64
        public let wallNanoseconds: Int64
        public let subject: UnsafeRawBufferPointer
        public let payload: UnsafeRawBufferPointer
    }

    /// Why reading stopped.
    public enum Stop: Equatable, Sendable {
        /// Every byte was a whole, valid record.
        case end
        /// The bytes from `offset` on are a record cut short, or zeros (a write that a crash interrupted, or
        /// space the file system allocated and never filled): cut them off.
        case truncated(offset: Int)
        /// The record at `offset` is whole but fails its checksum or makes no sense: the file is damaged.
        case corrupt(offset: Int)

        /// Where a record that is not whole or not valid starts, or nil when reading reached the end.
        public var badRecordOffset: Int? {
            switch self {
            case .end: return nil
            case .truncated(let offset), .corrupt(let offset): return offset
            }
        }
    }

    public let bytes: UnsafeRawBufferPointer
    public private(set) var offset: Int
    /// The checksums' start for the segment being read (`HistoryRecord.checksumSeed`).
    private let seed: UInt32

    /// A reader of the bytes of segment `segment`.
    public init(_ bytes: UnsafeRawBufferPointer, segment: UInt32, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
        seed = HistoryRecord.checksumSeed(segment: segment)
    }

    /// The next record, or nil with why reading stopped (`stop` then stays where it is).
    public mutating func next() -> View? {
        guard storedStop == nil, boundary == nil else { return nil }
        let body = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
        let crc = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian
        let start = offset + HistoryRecord.headerBytes
        let end = start + Int(body)
        let base = bytes.baseAddress!
        let fields = UnsafeRawBufferPointer(start: base + start, count: Int(body))
        guard CRC32C.checksum(fields, continuing: seed) == crc, fields[0] == HistoryRecord.kindMessage else {
            storedStop = .corrupt(offset: offset)
            return nil
        }
        let subjectBytes = Int(fields.loadUnaligned(fromByteOffset: 25, as: UInt16.self).littleEndian)
        guard HistoryRecord.fixedBodyBytes + subjectBytes <= fields.count, subjectBytes > 0 else {
            storedStop = .corrupt(offset: offset)
            return nil
        }
        let view = View(
            seq: fields.loadUnaligned(fromByteOffset: 1, as: UInt64.self).littleEndian,
            serial: fields.loadUnaligned(fromByteOffset: 9, as: UInt64.self).littleEndian,
            wallNanoseconds: Int64(bitPattern: fields.loadUnaligned(fromByteOffset: 17, as: UInt64.self).littleEndian),
            subject: UnsafeRawBufferPointer(start: base + start + HistoryRecord.fixedBodyBytes, count: subjectBytes),
            payload: UnsafeRawBufferPointer(start: base + start + HistoryRecord.fixedBodyBytes + subjectBytes,
                                            count: Int(body) - HistoryRecord.fixedBodyBytes - subjectBytes)
        )
        offset = end
        return view
    }

    /// Why reading stopped, or nil while records are left.
    public var stop: Stop? { storedStop ?? boundary }

    /// Why the reader cannot go on from `offset`, or nil when a whole record of plausible length lies there.
    private var boundary: Stop? {
        let left = bytes.count - offset
        if left == 0 { return .end }
        if left < HistoryRecord.headerBytes { return .truncated(offset: offset) }
        let body = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian)
        if body == 0 && isZero(from: offset) { return .truncated(offset: offset) }
        if body < HistoryRecord.fixedBodyBytes || body > HistoryRecord.maxBodyBytes { return .corrupt(offset: offset) }
        if body > left - HistoryRecord.headerBytes { return .truncated(offset: offset) }
        return nil
    }

    private var storedStop: Stop?

    /// Whether a whole, valid record of `segment` starts anywhere in `bytes` after `offset`: a record that does
    /// not check out with one after it is damage, not the torn end of the writes. Every byte is tried, since
    /// the damage may have hit a length; a start is checked only when its length fits and its kind is a
    /// message's, so the cost is about one checksum of a record per record of the rest.
    public static func holdsRecord(in bytes: UnsafeRawBufferPointer, segment: UInt32, after offset: Int) -> Bool {
        let seed = HistoryRecord.checksumSeed(segment: segment)
        var start = offset + 1
        while start + HistoryRecord.headerBytes + HistoryRecord.fixedBodyBytes < bytes.count {
            defer { start += 1 }
            let body = Int(bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self).littleEndian)
            guard body > HistoryRecord.fixedBodyBytes, body <= bytes.count - start - HistoryRecord.headerBytes,
                  bytes[start + HistoryRecord.headerBytes] == HistoryRecord.kindMessage else { continue }
            let crc = bytes.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self).littleEndian
            let first = start + HistoryRecord.headerBytes
            let fields = UnsafeRawBufferPointer(rebasing: bytes[first..<(first + body)])
            if CRC32C.checksum(fields, continuing: seed) == crc { return true }
        }
        return false
    }

    private func isZero(from start: Int) -> Bool {
        for index in start..<bytes.count where bytes[index] != 0 { return false }
        return true
    }
}
