#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the history directory held at start-up, checked and repaired: read before the loop serves anyone.
///
/// Repairs: a segment whose end is a record cut short (or zeros) is cut at its last whole record; a segment
/// with a record that fails its checksum in the middle is moved to `damaged/` and none of its records is
/// used. Either way a note says what went, for the log.
public struct HistoryDisk: Sendable {
    static let stateFile = "state"
    static let numberingFile = "numbering"

    /// A segment's usable bytes: whole, checked records only.
    public struct Segment: Sendable {
        public let id: UInt32
        public let bytes: [UInt8]
    }

    public let directory: String
    /// The server's epoch: the one the directory names, or a fresh one for a new directory.
    public let epoch: String
    /// Whether the directory existed with a state (false: a new directory, nothing to recover).
    public let existed: Bool
    /// Whether the last stop was clean: every record written and the numbering snapshot valid.
    public let clean: Bool
    /// Whether the last run, had it crashed, let the subjects found on disk keep their epochs (`DiskState`):
    /// it ran with `history_fsync: always` and nothing happened that its records do not prove.
    public let epochsKept: Bool
    /// Every subject's numbering at the clean stop (nil after a crash).
    public let numbering: NumberingSnapshot?
    /// Whether a segment was damaged and moved aside.
    public let damaged: Bool
    public let segments: [Segment]
    /// The segment new records go to: after every existing one.
    public let nextSegment: UInt32
    /// Bytes of the segments kept.
    public let diskBytes: Int
    /// What recovery did, one line each, for the log.
    public let notes: [String]
    /// Holds the directory's lock: the writer closes it at its clean stop.
    public let lockDescriptor: Int32

    /// Reads and repairs `directory` (made if missing), then marks it in use (`state` says not clean until the
    /// next clean stop, and `epochsKept` whether a crash of this run may keep epochs). Throws when the directory
    /// cannot be made, read or written. A segment that cannot be read is moved aside like a damaged one.
    public static func open(directory: String, epochsKept: Bool = false,
                            freshEpoch: () -> String) throws(DiskError) -> HistoryDisk {
        try DiskFiles.makeDirectory(directory)
        let lockDescriptor = try lock(directory)
        let statePath = directory + "/" + stateFile
        var notes: [String] = []
        let state = try DiskFiles.read(statePath)
        let parsed = state.flatMap(DiskState.init(decoding:))
        if state != nil && parsed == nil { notes.append("history: \(statePath) is unreadable; starting a new epoch") }
        var numbering: NumberingSnapshot?
        if let parsed, parsed.clean {
            numbering = try DiskFiles.read(directory + "/" + numberingFile).flatMap(NumberingSnapshot.init(decoding:))
            if numbering == nil { notes.append("history: the numbering snapshot is missing or damaged") }
        }
        let epoch = parsed?.epoch ?? freshEpoch()

        var segments: [Segment] = []
        var damaged = false
        var diskBytes = 0
        let names = try DiskFiles.list(directory)
        // An emptied segment kept for reuse (`SegmentFiles`) holds nothing of use across a restart.
        if names.contains(DiskFiles.spareName) { try DiskFiles.remove(directory + "/" + DiskFiles.spareName) }
        let ids = names.compactMap(DiskFiles.segmentID(of:)).sorted()
        for id in ids {
            let path = DiskFiles.segmentPath(id, in: directory)
            let read: [UInt8]?
            do {
                read = try DiskFiles.read(path)
            } catch {
                // One unreadable file costs its records and the epochs, not the server.
                notes.append("history: \(path) cannot be read (\(error)); its records are unused, and every " +
                             "subject starts under a new epoch")
                damaged = true
                try? moveAside(path, id: id, in: directory)
                continue
            }
            guard var bytes = read else { continue }
            var stop = bytes.withUnsafeBytes { raw in
                var reader = HistoryRecordReader(raw, segment: id)
                while reader.next() != nil {}
                return reader.stop!
            }
            // After a crash, the segment being written may end in a torn write or, in a reused file, in bytes of
            // its earlier use not yet written over: there the first record that does not check out ends it, as
            // long as no record of this segment follows it. One that does makes it damage, not a torn end: the
            // writer appends in order, so what lies before a record it wrote was written whole. Anywhere else,
            // and after a clean stop (which cuts the file to its records), such a record is damage.
            // A length that runs past the file's end (`truncated`) is judged the same way: damage to a length
            // field looks like a torn end until a whole record is found after it.
            if let offset = stop.badRecordOffset, parsed?.clean != true, id == ids.last {
                if bytes.withUnsafeBytes({ HistoryRecordReader.holdsRecord(in: $0, segment: id, after: offset) }) {
                    // Damage in the segment being written: the records before it are kept (acknowledged ones
                    // among them), the rest is kept aside for a look, and no epoch is trusted.
                    let aside = directory + "/" + DiskFiles.damagedFolder + "/" + DiskFiles.segmentName(id) + ".rest"
                    try? DiskFiles.makeDirectory(directory + "/" + DiskFiles.damagedFolder)
                    try? DiskFiles.overwrite(aside, with: Array(bytes[offset...]))
                    notes.append("history: \(path): damaged record at byte \(offset), with whole records after it; " +
                                 "cut there (\(bytes.count - offset) bytes, kept in \(aside)), and every subject " +
                                 "starts under a new epoch")
                    try DiskFiles.truncate(path, to: offset)
                    bytes.removeLast(bytes.count - offset)
                    damaged = true
                    stop = .end
                } else {
                    stop = .truncated(offset: offset)
                }
            }
            switch stop {
            case .end:
                break
            case .truncated(let offset):
                notes.append("history: \(path): cut \(bytes.count - offset) bytes after the last whole record")
                try DiskFiles.truncate(path, to: offset)
                bytes.removeLast(bytes.count - offset)
            case .corrupt(let offset):
                let aside = try moveAside(path, id: id, in: directory)
                notes.append("history: \(path): damaged record at byte \(offset); moved to \(aside), its " +
                             "\(bytes.count) bytes unused, and every subject starts under a new epoch")
                damaged = true
                continue
            }
            diskBytes += bytes.count
            segments.append(Segment(id: id, bytes: bytes))
        }
        // This run may keep epochs after a crash only when what it starts from is proven too: a new directory,
        // a clean stop, or a crash that kept them, with nothing damaged. After a recovery that renewed epochs,
        // older records under the old ones stay on disk, and a crash must not take them up again.
        let clean = parsed?.clean == true && numbering != nil
        let proven = (parsed == nil && ids.isEmpty) || clean || parsed?.epochsKept == true
        // From here on a crash is a crash: the snapshot is only good until the numbering moves on. Written in
        // place: a full disk has room for it where a temporary file and a rename would need a new block.
        let mine = DiskState(epoch: epoch, clean: false, epochsKept: epochsKept && proven && !damaged)
        try DiskFiles.overwrite(statePath, with: mine.encoded())
        return HistoryDisk(directory: directory, epoch: epoch, existed: parsed != nil, clean: clean,
                           epochsKept: parsed?.epochsKept == true,
                           numbering: numbering, damaged: damaged, segments: segments,
                           nextSegment: (ids.last ?? 0) + 1, diskBytes: diskBytes, notes: notes,
                           lockDescriptor: lockDescriptor)
    }

    /// Moves segment `id` to `damaged/`; returns where it went.
    @discardableResult
    static func moveAside(_ path: String, id: UInt32, in directory: String) throws(DiskError) -> String {
        try DiskFiles.makeDirectory(directory + "/" + DiskFiles.damagedFolder)
        let aside = directory + "/" + DiskFiles.damagedFolder + "/" + DiskFiles.segmentName(id)
        try syscall("move", path) { rename(path, aside) }
        return aside
    }

    /// Takes the directory for this process: two servers writing one directory would interleave their records
    /// and each trust its own numbering. The lock (flock on `lock`) lasts until the writer's clean stop closes
    /// its descriptor, or the process ends, however it ends. Returns the descriptor.
    static func lock(_ directory: String) throws(DiskError) -> Int32 {
        let path = directory + "/lock"
        let fd = try syscall("create", path) { DiskFiles.openForLock(path) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(fd)
            throw DiskError(operation: code == EWOULDBLOCK ? "another fanoutd holds the lock" : "lock", path: path,
                            errno: code)
        }
        return fd
    }

    /// Every record of the kept segments, in file order.
    public func forEachRecord(_ body: (UInt32, HistoryRecordReader.View, Int) -> Void) {
        for segment in segments {
            segment.bytes.withUnsafeBytes { raw in
                var reader = HistoryRecordReader(raw, segment: segment.id)
                var start = 0
                while let record = reader.next() {
                    body(segment.id, record, reader.offset - start)
                    start = reader.offset
                }
            }
        }
    }
}
