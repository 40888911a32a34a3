#if canImport(Glibc)
import Glibc
#endif
import FanoutServer

/// Tells systemd about the server: readiness, status, reloads, stopping and watchdog keep-alives. Each is a
/// datagram to `$NOTIFY_SOCKET` (the protocol of sd_notify(3), which systemd documents as stable for
/// programs that do not link libsystemd); without that variable every call does nothing. Spoken here rather
/// than through libsystemd, which with the libraries it loads (gcrypt, lz4, zstd, lzma, cap) was about 1 MB
/// of the daemon's memory for three small functions.
final class SystemdNotifier: ServiceNotifier {
    func ready(status: String) { Self.notify("READY=1\nSTATUS=\(status)") }
    func reloading() { Self.notify("RELOADING=1") }
    func stopping() { Self.notify("STOPPING=1") }
    func status(_ text: String) { Self.notify("STATUS=\(text)") }
    func watchdog() { Self.notify("WATCHDOG=1") }

    /// Half of `WatchdogSec=` (systemd passes it as `WATCHDOG_USEC`, for `WATCHDOG_PID` when that is set), or
    /// nil when no watchdog is asked for.
    var watchdogInterval: Duration? {
        if let pid = TextFile.environment("WATCHDOG_PID"), Int32(pid) != getpid() { return nil }
        guard let text = TextFile.environment("WATCHDOG_USEC"), let microseconds = UInt64(text), microseconds > 0 else {
            return nil
        }
        return .microseconds(Int64(clamping: microseconds / 2))
    }

    /// Sends `state` to the manager; returns false when there is none (or it cannot be reached).
    @discardableResult
    static func notify(_ state: String) -> Bool {
        guard let path = TextFile.environment("NOTIFY_SOCKET"), path.hasPrefix("/") || path.hasPrefix("@") else {
            return false
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            for (index, byte) in bytes.enumerated() { sunPath[index] = byte }
            // "@name" is Linux's abstract namespace: a leading NUL, and no NUL at the end.
            if bytes.first == UInt8(ascii: "@") { sunPath[0] = 0 }
        }
        let length = MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == UInt8(ascii: "@") ? 0 : 1)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var message = state
        let sent = message.withUTF8 { text in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, text.baseAddress, text.count, Int32(MSG_NOSIGNAL), $0, socklen_t(length))
                }
            }
        }
        return sent > 0
    }
}
