import Glibc

/// The process's open descriptors as `/proc/self/fd` shows them, for tests that a teardown closed what it opened.
/// Tests run in parallel in one process, so a count of descriptors proves nothing: a socket is told by its inode
/// (`socket:[12345]`), which no other socket has while it is open.
enum OpenDescriptors {
    /// What descriptor `fd` refers to (`socket:[inode]`, a path, `anon_inode:[eventpoll]`), or nil when closed.
    static func target(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Every open descriptor's target.
    static func targets() -> Set<String> {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        var found: Set<String> = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let fd = Int32(name), let target = target(of: fd) { found.insert(target) }
        }
        return found
    }
}
