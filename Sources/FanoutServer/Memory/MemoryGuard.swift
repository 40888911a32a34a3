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

    mutating func tearDown() {
        trimTimer = nil
        checkTimer = nil
    }
}
