#if canImport(Glibc)
import Glibc
#endif

/// Files, standard streams and the environment, through the C library: the daemon needs nothing more of
/// them, and full Foundation (with ICU) was several megabytes of every process's memory.
enum TextFile {
    struct ReadError: Error, CustomStringConvertible {
        let description: String
    }

    /// The whole file at `path`, as UTF-8 text.
    static func read(_ path: String) throws(ReadError) -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    /// The whole file at `path`, as bytes (a key file need not be text).
    static func readBytes(_ path: String) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        guard let bytes = readAll(fd) else { throw ReadError(description: String(cString: strerror(errno))) }
        return bytes
    }

    /// Every byte of `fd` up to its end, or nil on a read error.
    static func readAll(_ fd: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += chunk[0..<count]
            } else if count == 0 {
                return bytes
            } else if errno != EINTR {
                return nil
            }
        }
    }

    /// Writes all of `text` to `fd` (stderr for logs), retrying short writes; best effort.
    static func write(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// The names of every environment variable.
    static func environmentNames() -> [String] {
        var names: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            names.append(String(text.prefix { $0 != "=" }))
            entry += 1
        }
        return names
    }

    /// The environment variable `name`, or nil when it is not set.
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
