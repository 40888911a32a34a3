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
    /// Bytes promised to input not yet whole: a BPUB payload at its announced length from its header on, a
    /// WebSocket binary message's buffer as a frame's header asks it to grow, a `POST /publish` body at its
    /// Content-Length; until published or their connection goes. At most max_memory: what would pass it is
    /// refused (`Server.reservePayload`).
    var payloadBytes = 0
    /// Of those, the bytes that have arrived: what the bound's drops weigh, so that promises with no bytes
    /// behind them never get a subscriber dropped.
    var payloadReceived = 0
    /// The connections holding some of `payloadReceived`: at most max_connections, each once.
    var payloadHolders: Set<UInt64> = []
    /// `payloadReceived` when the bound was last checked: a check comes sooner when payloads grow fast.
    var payloadReceivedAtCheck = 0

    mutating func tearDown() {
        trimTimer = nil
        checkTimer = nil
    }
}
