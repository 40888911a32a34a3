#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The write-behind thread's files: the segment being written, and one emptied segment kept to be reused
/// (`spare`). Owned by that thread alone. Segments are written with `O_DIRECT` where the file system takes
/// it (`DirectWrites`), else through the page cache.
///
/// Why reuse: a segment written afresh costs the file system a block reservation per 4 KiB (and, written
/// through the page cache, a page allocated and charged), and its deletion as much again to free them. Under a
/// steady stream that trims as fast as it writes (scenario C keeps 1,000 messages), a 64 MiB segment is
/// written, emptied and deleted every few seconds, and that work was most of what history on disk added to a
/// publish.
///
/// A reused file holds records of its earlier use past what is written so far. Each record's checksum covers
/// its segment's id (`HistoryRecord`), so none of them reads as one of the new segment's; the file is cut to
/// what was written when the writer moves to the next segment and at a clean stop, and after a crash the
/// reader ends the last segment at the first record that does not check out (`HistoryDisk.open`).
struct SegmentFiles {
    struct OpenSegment {
        let id: UInt32
        let fd: Int32
        /// Bytes in the file (a reused file's old bytes included).
        var size: Int
        /// Where the next record goes.
        var offset: Int
        /// Its direct writes, or nil when it is written through the page cache.
        var direct: DirectWrites?
        /// Written through the cache for now (a writer behind), direct again afterwards.
        var paused = false
    }

    let directory: String
    /// Whether segments are written with `O_DIRECT` where the file system takes it (`DirectWrites`).
    let writesDirect: Bool
    /// Failures to meet, for tests (`DiskFaults`).
    let faults: DiskFaults?
    private(set) var current: OpenSegment?
    private var hasSpare = false

    init(directory: String, writesDirect: Bool = true, faults: DiskFaults? = nil) {
        self.directory = directory
        self.writesDirect = writesDirect && DirectWrites.openFlag != nil
        self.faults = faults
    }

    func path(_ id: UInt32) -> String { DiskFiles.segmentPath(id, in: directory) }
    private var sparePath: String { directory + "/" + DiskFiles.spareName }

    /// Makes segment `id` the one written, from the spare when there is one; `syncDirectory` makes its name
    /// durable. The previous one must be closed.
    mutating func open(_ id: UInt32, syncDirectory: Bool) throws(DiskError) {
        let path = path(id)
        var reused = false
        if hasSpare {
            hasSpare = false
            reused = rename(sparePath, path) == 0
        }
        let fd = try syscall("create", path) { Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640) }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let code = errno
            Glibc.close(fd)
            throw DiskError(operation: "stat", path: path, errno: code)
        }
        let size = Int(info.st_size)
        // A reused file is written from its start; any other file that exists already is appended to.
        let offset = reused ? 0 : size
        current = OpenSegment(id: id, fd: fd, size: size, offset: offset, direct: directWrites(fd, path, from: offset))
        if syncDirectory { try DiskFiles.syncDirectory(directory) }
    }

    /// Direct writes for `fd`, whose records end at `offset`, when the file system takes them; else nil.
    private func directWrites(_ fd: Int32, _ path: String, from offset: Int) -> DirectWrites? {
        guard writesDirect, let flag = DirectWrites.openFlag else { return nil }
        let direct = try? DirectWrites(offset: offset) { (tail: UnsafeMutableRawBufferPointer) throws(DiskError) in
            // Read before O_DIRECT is set, so that the buffer needs no alignment of its own.
            let read = try syscall("read", path) { pread(fd, tail.baseAddress, tail.count, off_t(offset - tail.count)) }
            if read != tail.count { throw DiskError(operation: "read", path: path, errno: EIO) }
        }
        // Some file systems (tmpfs before Linux 6.6) refuse O_DIRECT here (EINVAL): they are written through
        // the page cache.
        guard let direct, fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | flag) == 0 else { return nil }
        return direct
    }

    /// Writes `batches` in order where the segment's records end; returns how many bytes the file grew by.
    /// Direct when the file takes it; else in one `pwritev` per 1,024 batches (a write per publish run cost
    /// a call per 100 records). A direct write refused with EINVAL (a file system that takes O_DIRECT but not
    /// this alignment) turns the file's direct writes off, and the batches are written again through the cache.
    ///
    /// `throughCache` writes these batches through the page cache even where direct writes work: the writer
    /// asks it when it has fallen behind, since the cache takes a burst at memory speed where a direct write
    /// waits for the device. The next append without it goes direct again.
    ///
    /// A write that fails leaves the file as it was before the call: cut back to where its records ended, so
    /// that what is written next follows the last whole record. Without that cut, the records after a failure
    /// (a disk that filled, then had room again) followed a torn one, and the segment read as damaged.
    mutating func append(_ batches: [UnsafeRawBufferPointer], throughCache: Bool = false) throws(DiskError) -> Int {
        guard let file = current else {
            throw DiskError(operation: "write", path: directory + " (no segment open)", errno: EBADF)
        }
        let start = file.offset
        do {
            return try appendWhole(batches, throughCache: throughCache)
        } catch {
            rewind(to: start)
            throw error
        }
    }

    /// Cuts the open segment back to `offset` after a failed write, and starts its staging again from there.
    private mutating func rewind(to offset: Int) {
        guard var file = current else { return }
        Self.stopWritingDirect(&file)
        _ = ftruncate(file.fd, off_t(offset))
        file.offset = offset
        file.size = offset
        if !file.paused { file.direct = directWrites(file.fd, path(file.id), from: offset) }
        current = file
    }

    private mutating func appendWhole(_ batches: [UnsafeRawBufferPointer],
                                      throughCache: Bool) throws(DiskError) -> Int {
        guard var file = current else { return 0 }
        if throughCache, file.direct != nil {
            Self.stopWritingDirect(&file)
            file.paused = true
        } else if !throughCache && file.paused {
            // The block the records end in is read back, through the cache, before O_DIRECT is set again.
            file.direct = directWrites(file.fd, path(file.id), from: file.offset)
            file.paused = false
        }
        current = file
        if let direct = file.direct {
            do {
                let faults = faults
                let end = try direct.append(batches) { bytes, offset in
                    Self.write(file.fd, bytes, at: offset, faults: faults)
                }
                file.offset = direct.offset
                let grown = max(0, end - file.size)
                file.size += grown
                current = file
                return grown
            } catch {
                guard error.errno == EINVAL else {
                    throw DiskError(operation: "write", path: path(file.id), errno: error.errno)
                }
                // `file.offset` is still where this append began: the batches are written again from there.
                Self.stopWritingDirect(&file)
                current = file
            }
        }
        return try appendBuffered(batches)
    }

    /// Clears `O_DIRECT` on the file and drops its direct writes: it is written through the page cache.
    private static func stopWritingDirect(_ file: inout OpenSegment) {
        if let flag = DirectWrites.openFlag { _ = fcntl(file.fd, F_SETFL, fcntl(file.fd, F_GETFL) & ~flag) }
        file.direct = nil
    }

    private mutating func appendBuffered(_ batches: [UnsafeRawBufferPointer]) throws(DiskError) -> Int {
        guard var file = current else { return 0 }
        var first = 0
        var skip = 0
        while first < batches.count {
            let end = min(batches.count, first + 1024)
            let wrote = withUnsafeTemporaryAllocation(of: iovec.self, capacity: end - first) { vectors -> Int in
                for index in first..<end {
                    let bytes = batches[index]
                    let start = index == first ? skip : 0
                    // Not written through: iovec's pointer is mutable for readv's sake.
                    let base = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
                    vectors[index - first] = iovec(iov_base: base.map { $0 + start }, iov_len: bytes.count - start)
                }
                if let faults {
                    return Self.write(file.fd, UnsafeBufferPointer(rebasing: vectors[0..<(end - first)]),
                                      at: file.offset, faults: faults)
                }
                return pwritev(file.fd, vectors.baseAddress, Int32(end - first), off_t(file.offset))
            }
            if wrote < 0 && errno == EINTR { continue }
            if wrote < 0 {
                current = file
                throw DiskError(operation: "write", path: path(file.id), errno: errno)
            }
            file.offset += wrote
            // Past what was written: whole batches, then into the next one.
            var left = wrote
            while first < batches.count && left >= batches[first].count - skip {
                left -= batches[first].count - skip
                first += 1
                skip = 0
            }
            skip += left
        }
        let grown = max(0, file.offset - file.size)
        file.size += grown
        current = file
        return grown
    }

    /// A positioned write of `bytes` at `offset`, through `faults` when a test set some.
    private static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int,
                              faults: DiskFaults?) -> Int {
        guard let faults else { return pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset)) }
        let (code, allowed) = faults.beforeWrite(length: bytes.count)
        if let code {
            errno = code
            return -1
        }
        if allowed < bytes.count {
            // Torn: what goes out is cut anywhere, so the alignment O_DIRECT asks for cannot hold.
            if let flag = DirectWrites.openFlag { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~flag) }
            _ = pwrite(fd, bytes.baseAddress, allowed, off_t(offset))
            faults.tore()
        }
        return pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
    }

    /// `pwritev`'s gathered form of `write`: the pieces one after another, through `faults`.
    private static func write(_ fd: Int32, _ vectors: UnsafeBufferPointer<iovec>, at offset: Int,
                              faults: DiskFaults) -> Int {
        var done = 0
        for vector in vectors {
            let wrote = write(fd, UnsafeRawBufferPointer(start: vector.iov_base, count: vector.iov_len),
                              at: offset + done, faults: faults)
            if wrote < 0 { return done > 0 ? done : -1 }
            done += wrote
            if wrote < vector.iov_len { break }
        }
        return done
    }

    /// Cuts a reused file's old bytes after the segment's records; returns how many bytes went.
    mutating func cutToWritten() throws(DiskError) -> Int {
        guard var file = current, file.offset < file.size else { return 0 }
        try syscall("truncate", path(file.id)) { ftruncate(file.fd, off_t(file.offset)) }
        let cut = file.size - file.offset
        file.size = file.offset
        current = file
        return cut
    }

    mutating func close() {
        if let file = current { Glibc.close(file.fd) }
        current = nil
    }

    /// Removes segment `id` (not the open one): kept as the spare when there is none, else deleted. Returns
    /// the bytes the directory lost.
    mutating func remove(_ id: UInt32) throws(DiskError) -> Int {
        let path = path(id)
        if !hasSpare {
            if rename(path, sparePath) == 0 {
                hasSpare = true
                return 0
            }
            if errno == ENOENT { return 0 }
        }
        var info = stat()
        let size = stat(path, &info) == 0 ? Int(info.st_size) : 0
        if unlink(path) != 0 {
            if errno == ENOENT { return 0 }
            throw DiskError(operation: "delete", path: path, errno: errno)
        }
        return size
    }
}
