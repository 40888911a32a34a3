/// Failed AUTH attempts per client address, so that guessing tokens is slow however many connections a host
/// opens: each address has a bucket of `burst` failures that refills at `refillPerSecond`. An address whose
/// bucket is empty has its AUTHs refused unchecked for a delay that doubles each time it comes back too soon
/// (up to `maxDelay`), and starts afresh once its bucket has refilled.
///
/// Worst case: at most `capacity` addresses are kept; admitting or recording is O(1), except an insertion
/// into a full table, which scans it once (O(capacity)) to drop refilled buckets, or the oldest when none is.
struct AuthThrottle {
    static let burst = 10.0
    static let refillPerSecond = 0.5
    static let maxDelay = Duration.seconds(60)
    static let capacity = 4096

    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        var blockedUntil: ContinuousClock.Instant?
        var lockouts: Int
    }

    private(set) var buckets: [String: Bucket] = [:]

    /// Nil when an AUTH from `host` may be checked now; otherwise how long the host must wait.
    mutating func admit(_ host: String, at now: ContinuousClock.Instant) -> Duration? {
        guard var bucket = buckets[host] else { return nil }
        Self.refill(&bucket, at: now)
        defer { buckets[host] = bucket }
        if let until = bucket.blockedUntil, now < until { return until - now }
        bucket.blockedUntil = nil
        if bucket.tokens >= 1 { return nil }
        bucket.lockouts += 1
        let delay = min(Self.maxDelay, .seconds(1 / Self.refillPerSecond) * (1 << min(bucket.lockouts - 1, 16)))
        bucket.blockedUntil = now + delay
        return delay
    }

    /// Takes a token from `host`'s bucket for a failed AUTH.
    mutating func recordFailure(_ host: String, at now: ContinuousClock.Instant) {
        if var bucket = buckets[host] {
            Self.refill(&bucket, at: now)
            bucket.tokens = max(0, bucket.tokens - 1)
            buckets[host] = bucket
            return
        }
        if buckets.count >= Self.capacity { makeRoom(at: now) }
        buckets[host] = Bucket(tokens: Self.burst - 1, updated: now, blockedUntil: nil, lockouts: 0)
    }

    private static func refill(_ bucket: inout Bucket, at now: ContinuousClock.Instant) {
        let elapsed = now - bucket.updated
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        bucket.tokens = min(burst, bucket.tokens + seconds * refillPerSecond)
        bucket.updated = now
        if bucket.tokens >= burst && bucket.blockedUntil.map({ now >= $0 }) ?? true {
            bucket.lockouts = 0
            bucket.blockedUntil = nil
        }
    }

    /// Drops every bucket that has refilled (it says nothing any more), or the least recently updated one.
    private mutating func makeRoom(at now: ContinuousClock.Instant) {
        let before = buckets.count
        buckets = buckets.filter { _, bucket in
            var bucket = bucket
            Self.refill(&bucket, at: now)
            return bucket.tokens < Self.burst || bucket.blockedUntil != nil
        }
        if buckets.count == before, let oldest = buckets.min(by: { $0.value.updated < $1.value.updated })?.key {
            buckets[oldest] = nil
        }
    }
}

/// A log line that may be wanted thousands of times a second (a failed AUTH): the first of an interval is
/// written at once, the rest are counted and summed up in one line when the interval ends.
struct SuppressedLog {
    static let interval = Duration.seconds(10)
    /// Occurrences since the last line written, and the addresses they came from (at most a few named).
    private(set) var suppressed = 0
    private(set) var sources: Set<String> = []
    private var lastWritten: ContinuousClock.Instant?

    /// Whether this occurrence is to be written now; if not, it is counted.
    mutating func shouldWrite(from source: String, at now: ContinuousClock.Instant) -> Bool {
        if let last = lastWritten, now - last < Self.interval {
            suppressed += 1
            if sources.count < 8 { sources.insert(source) }
            return false
        }
        lastWritten = now
        return true
    }

    /// The summary of what was counted, and a fresh count; nil when nothing was.
    mutating func takeSummary() -> (count: Int, sources: [String])? {
        guard suppressed > 0 else { return nil }
        defer {
            suppressed = 0
            sources = []
        }
        return (suppressed, sources.sorted())
    }
}
