#if canImport(Glibc)
import Glibc
#endif

/// Process limits that a server with many sockets needs raised.
public enum ResourceLimits {
    /// Raises the soft open-files limit toward `wanted` (never past the hard limit); returns the new soft limit.
    @discardableResult
    public static func raiseOpenFiles(to wanted: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        let target = min(rlim_t(max(wanted, 0)), limit.rlim_max)
        if target > limit.rlim_cur {
            limit.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(clamping: limit.rlim_cur)
    }
}
