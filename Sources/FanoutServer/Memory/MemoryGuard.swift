import FanoutEventLoop

/// The server-wide memory bound (max_memory): the connections with large backlogs it watches, its check's
/// timer, and giving freed output back to the system.
struct MemoryGuard {
    var backlogWatch = BacklogWatch()
    /// Queued output freed by slow-consumer drops since the allocator was last asked to give memory back.
    var freedSinceTrim = 0
    var trimTimer: LoopTimer?
    var checkTimer: LoopTimer?
    /// Bytes queued to clients when the bound was last checked.
    var bytesOutAtCheck: UInt64 = 0
    /// Bytes held for BPUB payloads still being read, each counted at its announced length when its header is
    /// accepted (the framer gathers it into a buffer of exactly that size) until it is published or its
    /// connection goes; likewise a WebSocket binary message's buffer as it grows (`WebSocketDecoder.admit`)
    /// and a `POST /publish` body at its Content-Length. At most max_memory: growth that would pass it is
    /// refused.
    var payloadBytes = 0

    mutating func tearDown() {
        trimTimer = nil
        checkTimer = nil
    }
}
