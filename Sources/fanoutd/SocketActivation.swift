#if canImport(Glibc)
import Glibc
#endif

/// Sockets handed over by systemd's socket activation (sd_listen_fds(3)): `LISTEN_FDS` descriptors from 3 on,
/// meant for this process when `LISTEN_PID` is its pid.
enum SocketActivation {
    /// The inherited descriptors split by their LISTEN_FDNAMES name.
    struct Inherited {
        /// Every descriptor with no name below: they serve the line protocol.
        var lines: [Int32] = []
        /// Named `http` (`FileDescriptorName=http` in the socket unit): serves http_listen; the first only.
        var http: Int32?
        /// Named `https`: serves https_listen; the first only.
        var https: Int32?
        /// Named `mqtt`: serve MQTT in place of mqtt_listen's addresses.
        var mqtt: [Int32] = []
        /// Named `mqtts`: serve MQTT over TLS in place of mqtt_tls_listen's addresses.
        var mqtts: [Int32] = []
    }

    /// The inherited listening descriptors, each marked close-on-exec, by what they serve. The variables are
    /// unset, so that child processes do not take the sockets for theirs.
    static func inheritedListeners() -> Inherited {
        let names = (TextFile.environment("LISTEN_FDNAMES") ?? "")
            .split(separator: ":", omittingEmptySubsequences: false)
        var inherited = Inherited()
        for (index, fd) in inheritedDescriptors().enumerated() {
            switch index < names.count ? names[index] : "" {
            case "http" where inherited.http == nil: inherited.http = fd
            case "https" where inherited.https == nil: inherited.https = fd
            case "mqtt": inherited.mqtt.append(fd)
            case "mqtts": inherited.mqtts.append(fd)
            default: inherited.lines.append(fd)
            }
        }
        return inherited
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
