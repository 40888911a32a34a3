/// What the server-wide memory bound (`max_memory`) watches: the connections whose queued output has grown
/// past `BacklogWatch.mark`, so that a check sums only those, not every connection.
///
/// Worst case: a check is O(watched) and a drop O(watched · log watched), with watched ≤ max_connections; both
/// run only on the bound's timer, never per publish. Registering costs one set insertion, and only when a
/// socket's backlog first passes the mark.
struct BacklogWatch {
    /// Queued output above which a connection is watched: below it, even max_connections of them add up to
    /// little (10,000 × 64 KiB = 640 MiB at most, which is why the mark is not higher).
    static let mark = 64 * 1024

    /// Ids of connections whose backlog passed the mark and has not been seen below it since.
    var watched: Set<UInt64> = []
    /// Connections dropped to honour the bound since start.
    var drops: UInt64 = 0
    /// Queued output bytes over the watched connections at the last check.
    var lastQueued = 0
}

/// The estimated heap cost of the subject index, for `max_memory`: what a subscription costs measured with
/// one exact subject per subscription (its set, its entry, the connection's own record of it).
enum IndexMemory {
    static let bytesPerSubscription = 512
}
