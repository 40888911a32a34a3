/// Where every subject's numbering stood when the server stopped cleanly: the `numbering` file, written after
/// the last record, and valid only while `state` says the stop was clean.
///
/// ```
/// "FONUM001" | u64 serial base | u64 evictions | u64 count | count × (u64 last | u64 serial | u16 length |
/// subject) | u32 CRC-32C of all before it
/// ```
public struct NumberingSnapshot: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var subject: String
        public var last: UInt64
        public var serial: UInt64

        public init(subject: String, last: UInt64, serial: UInt64) {
            self.subject = subject
            self.last = last
            self.serial = serial
        }
    }

    public var serialBase: UInt64
    public var evictions: UInt64
    /// Least recently published first.
    public var entries: [Entry]

    public init(serialBase: UInt64, evictions: UInt64, entries: [Entry]) {
        self.serialBase = serialBase
        self.evictions = evictions
        self.entries = entries
    }

    static let magic = Array("FONUM001".utf8)

    public func encoded() -> [UInt8] {
        var out = Self.magic
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        put(serialBase)
        put(evictions)
        put(UInt64(entries.count))
        for entry in entries {
            put(entry.last)
            put(entry.serial)
            put(UInt16(entry.subject.utf8.count))
            out.append(contentsOf: entry.subject.utf8)
        }
        put(CRC32C.checksum(out))
        return out
    }

    /// The snapshot in `bytes`, or nil when they are not a whole, valid one.
    public init?(decoding bytes: [UInt8]) {
        guard bytes.count >= 36, Array(bytes[0..<8]) == Self.magic else { return nil }
        let parsed: NumberingSnapshot? = bytes.withUnsafeBytes { raw in
            let end = raw.count - 4
            guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<end]))
                    == raw.loadUnaligned(fromByteOffset: end, as: UInt32.self).littleEndian else { return nil }
            var offset = 8
            func take<T: FixedWidthInteger>(_: T.Type) -> T? {
                guard offset + MemoryLayout<T>.size <= end else { return nil }
                defer { offset += MemoryLayout<T>.size }
                return T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
            }
            guard let base = take(UInt64.self), let evictions = take(UInt64.self), let count = take(UInt64.self),
                  count <= UInt64(end / 18) else { return nil }
            var entries: [Entry] = []
            entries.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let last = take(UInt64.self), let serial = take(UInt64.self), let length = take(UInt16.self),
                      offset + Int(length) <= end else { return nil }
                let subject = String(decoding: UnsafeRawBufferPointer(rebasing: raw[offset..<offset + Int(length)]),
                                     as: UTF8.self)
                offset += Int(length)
                entries.append(Entry(subject: subject, last: last, serial: serial))
            }
            guard offset == end else { return nil }
            return NumberingSnapshot(serialBase: base, evictions: evictions, entries: entries)
        }
        guard let parsed else { return nil }
        self = parsed
    }
}

/// The `state` file: the server's epoch, whether the last stop was clean (a clean stop wrote every record and
/// the numbering snapshot; anything else is a crash), and whether a crash may keep the subjects' epochs. A few
/// lines of text, for an operator to read.
///
/// `epochs 1` is written at start under `history_fsync: always` only; it turns to `epochs 0`, in place and
/// synced, before anything is let out that the records on disk do not prove: a record that could not be written
/// or synced, a history rule that a reload removed while its subjects' numbering goes on. Each of those can
/// leave a subject whose disk holds fewer seqs than clients saw, and a crash must not number those seqs again.
/// Both forms have the same length, so the change is one write over bytes the file already has: it takes no
/// space, and works on a full disk.
public struct DiskState: Equatable, Sendable {
    public var epoch: String
    public var clean: Bool
    /// Whether, after a crash, the subjects found on disk may keep their epochs (see above).
    public var epochsKept: Bool

    public init(epoch: String, clean: Bool, epochsKept: Bool = false) {
        self.epoch = epoch
        self.clean = clean
        self.epochsKept = epochsKept
    }

    public func encoded() -> [UInt8] {
        Array("fanout-history 1\nepoch \(epoch)\nclean \(clean ? 1 : 0)\nepochs \(epochsKept ? 1 : 0)\n".utf8)
    }

    /// The state in `bytes`; a file of an earlier version, without its `epochs` line, keeps no epochs.
    public init?(decoding bytes: [UInt8]) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        guard lines.count == 3 || lines.count == 4, lines[0] == "fanout-history 1", lines[1].hasPrefix("epoch "),
              lines[2] == "clean 0" || lines[2] == "clean 1" else { return nil }
        guard lines.count == 3 || lines[3] == "epochs 0" || lines[3] == "epochs 1" else { return nil }
        let epoch = String(lines[1].dropFirst(6))
        guard (1...64).contains(epoch.utf8.count),
              epoch.utf8.allSatisfy({ $0 == 0x2E || $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0)
                                      || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else { return nil }
        self.epoch = epoch
        self.clean = lines[2] == "clean 1"
        self.epochsKept = lines.count == 4 && lines[3] == "epochs 1"
    }
}
