import Foundation

/// A tmpfs of a few MiB mounted for one test (root only): a disk that really fills. Unmounted when dropped.
final class SmallDisk {
    let path: String

    /// Whether this machine lets the tests mount one (root, and `mount` allowed): tried once.
    static let available: Bool = {
        let name = "fanout-probe-\(UUID().uuidString)"
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        guard let disk = SmallDisk(megabytes: 1, at: probe) else { return false }
        _ = disk
        return true
    }()

    /// Mounts a tmpfs of `megabytes` at `path` (made if missing); nil when mounting is refused.
    init?(megabytes: Int, at path: String) {
        self.path = path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard Self.run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path]) == 0 else { return nil }
    }

    deinit {
        _ = Self.run(["umount", "-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Gives the file system `megabytes` in all: room again after it filled.
    func resize(megabytes: Int) {
        _ = Self.run(["mount", "-o", "remount,size=\(megabytes)m", path])
    }

    /// Fills what is left with a file `name`, up to ENOSPC; returns its path.
    @discardableResult
    func fill(_ name: String = "filler") -> String {
        let file = path + "/" + name
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let block = [UInt8](repeating: 0x55, count: 65536)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        // The last bytes of a page the block did not fill.
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, 512) }) > 0 {}
        return file
    }

    /// Runs a tool and waits for it: posix_spawn and waitpid, which need no run loop (Foundation's `Process`
    /// waits on one, which a busy test run may not turn for a long while).
    private static func run(_ arguments: [String]) -> Int32 {
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        guard posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // Exited normally: its code; otherwise a failure.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }
}
