#if canImport(Glibc)
import Glibc
#endif

/// Sockets handed over by systemd's socket activation (sd_listen_fds(3)): `LISTEN_FDS` descriptors from 3 on,
/// meant for this process when `LISTEN_PID` is its pid.
enum SocketActivation {
    /// The inherited listening descriptors, each marked close-on-exec. The variables are unset, so that child
    /// processes do not take the sockets for theirs.
    /// The inherited descriptors split by their LISTEN_FDNAMES name: one named `http` serves http_listen
    /// (`FileDescriptorName=http` in the socket unit), one named `https` https_listen; every other one serves
    /// the line protocol.
    static func inheritedListeners() -> (protocol: [Int32], http: Int32?, https: Int32?) {
        let names = (TextFile.environment("LISTEN_FDNAMES") ?? "").split(separator: ":", omittingEmptySubsequences: false)
        let descriptors = inheritedDescriptors()
        var http: Int32?
        var https: Int32?
        var lines: [Int32] = []
        for (index, fd) in descriptors.enumerated() {
            let name = index < names.count ? names[index] : ""
            if name == "http" && http == nil {
                http = fd
            } else if name == "https" && https == nil {
                https = fd
            } else {
                lines.append(fd)
            }
        }
        return (lines, http, https)
    }

    static func inheritedDescriptors() -> [Int32] {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
        }
        guard let pid = TextFile.environment("LISTEN_PID"), Int32(pid) == getpid(),
              let text = TextFile.environment("LISTEN_FDS"), let count = Int32(text), count > 0 else {
            return []
        }
        let first: Int32 = 3  // SD_LISTEN_FDS_START
        return (first..<first + count).map { fd in
            _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
            return fd
        }
    }
}
