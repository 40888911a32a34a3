#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The history directory's files: `<16 hex digits>.seg` segments, in the order their names sort, the `state`
/// file, the `numbering` snapshot, the `lock` file, `spare` (an emptied segment kept for reuse), and
/// `damaged/`, where a segment that fails its checksums is moved.
enum DiskFiles {
    static let segmentSuffix = ".seg"
    static let damagedFolder = "damaged"
    static let spareName = "spare"

    static func segmentName(_ id: UInt32) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + segmentSuffix
    }

    static func segmentPath(_ id: UInt32, in directory: String) -> String { directory + "/" + segmentName(id) }

    static func segmentID(of name: String) -> UInt32? {
        guard name.hasSuffix(segmentSuffix), name.utf8.count == 16 + segmentSuffix.utf8.count else { return nil }
        return UInt32(name.dropLast(segmentSuffix.utf8.count), radix: 16)
    }

    /// The names in `directory`.
    static func list(_ directory: String) throws(DiskError) -> [String] {
        guard let handle = opendir(directory) else { throw DiskError(operation: "open directory", path: directory, errno: errno) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Makes `directory` (and its parents) if missing.
    static func makeDirectory(_ directory: String) throws(DiskError) {
        var path = directory.hasPrefix("/") ? "" : "."
        for part in directory.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o750) != 0 && errno != EEXIST {
                throw DiskError(operation: "create directory", path: path, errno: errno)
            }
        }
    }

    /// The whole file, or nil when it does not exist.
    static func read(_ path: String) throws(DiskError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw DiskError(operation: "open", path: path, errno: errno)
        }
        defer { close(fd) }
        var info = stat()
        try syscall("stat", path) { fstat(fd, &info) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer in Glibc.read(fd, buffer.baseAddress! + done, buffer.count - done) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw DiskError(operation: "read", path: path, errno: errno) }
            if got == 0 { break }
            done += got
        }
        if done < bytes.count { bytes.removeLast(bytes.count - done) }
        return bytes
    }

    /// Writes all of `bytes` at the file's current offset.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(DiskError) {
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { buffer in write(fd, buffer.baseAddress! + done, buffer.count - done) }
            if wrote < 0 && errno == EINTR { continue }
            if wrote < 0 { throw DiskError(operation: "write", path: path, errno: errno) }
            done += wrote
        }
    }

    /// Replaces `path` with `bytes` so that a crash leaves the old file or the new one, never a mix: a
    /// temporary file, fsync, rename, and an fsync of the directory.
    static func replace(_ path: String, with bytes: [UInt8], directory: String) throws(DiskError) {
        let temporary = path + ".tmp"
        let fd = try syscall("create", temporary) { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640) }
        defer { close(fd) }
        try writeAll(fd, bytes, path: temporary)
        try syscall("fsync", temporary) { fsync(fd) }
        try syscall("rename", temporary) { rename(temporary, path) }
        try syncDirectory(directory)
    }

    /// Writes `bytes` over the start of `path` (made if missing), cuts what is left after them, and syncs: no
    /// temporary file, so that a full disk still takes it when the file already holds as many bytes. A crash
    /// in the middle leaves a mix that no reader takes for a valid file (`DiskState` checks every line).
    static func overwrite(_ path: String, with bytes: [UInt8]) throws(DiskError) {
        let fd = try syscall("open", path) { open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o640) }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if wrote < 0 && errno == EINTR { continue }
            if wrote < 0 { throw DiskError(operation: "write", path: path, errno: errno) }
            done += wrote
        }
        try syscall("truncate", path) { ftruncate(fd, off_t(bytes.count)) }
        try syscall("fsync", path) { fsync(fd) }
    }

    static func syncDirectory(_ directory: String) throws(DiskError) {
        let fd = try syscall("open directory", directory) { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try syscall("fsync", directory) { fsync(fd) }
    }

    static func openForLock(_ path: String) -> Int32 {
        open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
    }

    static func remove(_ path: String) throws(DiskError) {
        if unlink(path) != 0 && errno != ENOENT { throw DiskError(operation: "delete", path: path, errno: errno) }
    }

    static func truncate(_ path: String, to length: Int) throws(DiskError) {
        try syscall("truncate", path) { Glibc.truncate(path, off_t(length)) }
    }
}
