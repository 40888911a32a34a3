import CSystemd

/// The service manager's side of the daemon (libsystemd's sd_notify, sd_listen_fds, sd_watchdog_enabled).
///
/// Every call is a no-op outside systemd: sd_notify does nothing without NOTIFY_SOCKET, and sd_listen_fds
/// finds nothing without LISTEN_FDS.
public enum ServiceManager {
    /// Sends `state` (`READY=1`, `STATUS=...`, ...) to the manager. Returns false when not under one.
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        sd_notify(0, state) > 0
    }

    /// How often the manager wants `WATCHDOG=1` (half of WatchdogSec=), or nil when no watchdog is set.
    public static var watchdogInterval: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(microseconds / 2))
    }

    /// Sockets passed by socket activation, as fds from SD_LISTEN_FDS_START, each marked close-on-exec.
    /// The environment variables are unset, so that child processes do not inherit them.
    public static func inheritedSockets() -> [InheritedSocket] {
        let count = sd_listen_fds(1)
        guard count > 0 else { return [] }
        return (0..<count).map { offset in
            let fd = SD_LISTEN_FDS_START + offset
            let isUnix = sd_is_socket_unix(fd, 1 /* SOCK_STREAM */, 1, nil, 0) > 0
            return InheritedSocket(fd: fd, isUnix: isUnix)
        }
    }
}

/// A listening socket handed over by the service manager.
public struct InheritedSocket: Sendable, Equatable {
    public let fd: Int32
    public let isUnix: Bool
}
