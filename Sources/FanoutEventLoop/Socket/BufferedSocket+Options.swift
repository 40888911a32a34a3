import CLibevent
#if canImport(Glibc)
import Glibc
#endif

// Timeouts and socket options, set once after accept or connect.
extension BufferedSocket {
    /// `read`: end with `.readTimeout` when nothing arrives for that long while reading is enabled.
    /// `write`: end with `.writeTimeout` when pending output makes no progress for that long.
    public func setTimeouts(read: Duration?, write: Duration?) {
        var readValue = read?.timeval ?? timeval()
        var writeValue = write?.timeval ?? timeval()
        withUnsafePointer(to: &readValue) { readPointer in
            withUnsafePointer(to: &writeValue) { writePointer in
                _ = bufferevent_set_timeouts(bev, read == nil ? nil : readPointer, write == nil ? nil : writePointer)
            }
        }
    }

    /// TCP keepalive: the kernel probes an idle peer after `idle` and gives up after `count` unanswered probes.
    public func enableKeepalive(idle: Duration, interval: Duration = .seconds(10), count: Int32 = 6) {
        setOption(SOL_SOCKET, SO_KEEPALIVE, 1)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, Int32(max(1, idle.components.seconds)))
        setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, Int32(max(1, interval.components.seconds)))
        setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, count)
    }

    /// Sends small writes at once: replies and pushes are whole lines already batched per loop iteration.
    public func disableNagle() {
        setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Caps the kernel's send buffer (the kernel doubles `bytes` for its bookkeeping), which also turns off
    /// its autotuning for this socket.
    public func setSendBuffer(bytes: Int) {
        setOption(SOL_SOCKET, SO_SNDBUF, Int32(clamping: bytes))
    }

    private func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        // Best effort: a socket that is not TCP (or already dead) simply keeps the kernel's default.
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}
