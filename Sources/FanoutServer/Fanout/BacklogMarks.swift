/// The queued-output marks a receiver's backlog is checked against after each write: the memory bound's watch
/// (`BacklogWatch.mark`), backpressure on the publisher (`backpressure_bytes`, when set) and the slow-consumer
/// limit (`max_pending_bytes`). Made once per flush from the configuration.
struct BacklogMarks {
    let limit: Int
    /// Int.max when backpressure is off.
    let holdAbove: Int
    /// The lowest of the marks: below it, nothing else is looked at (one comparison per receiver).
    let watchAbove: Int

    init(_ limits: Limits) {
        limit = limits.maxPendingBytes
        holdAbove = limits.backpressureBytes > 0 ? limits.backpressureBytes : Int.max
        watchAbove = min(holdAbove, limit, BacklogWatch.mark)
    }
}
