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
    /// Bytes held for BPUB payloads still being read, each counted as it arrives (not at its announced length:
    /// a header alone holds nothing) until it is published or its connection goes. Over max_memory, the
    /// largest holders are dropped with the largest backlogs, and a new header is refused.
    var payloadBytes = 0
    /// The connections holding some of `payloadBytes`: at most max_connections, each once.
    var payloadHolders: Set<UInt64> = []
    /// `payloadBytes` when the bound was last checked: a check comes sooner when payloads grow fast.
    var payloadBytesAtCheck = 0

    mutating func tearDown() {
        trimTimer = nil
        checkTimer = nil
    }
}
