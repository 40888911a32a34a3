extension UserLimits {
    /// A token bucket: `burst` publishes at once, refilled at `rate` per second. Rate and burst are passed to
    /// each call, not kept, so that a reload applies to every bucket at once. A clock that goes backwards
    /// refills nothing, and the bucket never holds less than nothing or more than the burst.
    struct Bucket: Equatable {
        private(set) var tokens: Double
        private(set) var last: ContinuousClock.Instant

        /// A full bucket.
        init(burst: Int, at now: ContinuousClock.Instant) {
            tokens = Double(burst)
            last = now
        }

        /// Takes one token if there is one: true when the publish may go.
        mutating func take(rate: Int, burst: Int, at now: ContinuousClock.Instant) -> Bool {
            refill(rate: rate, burst: burst, at: now)
            guard tokens >= 1 else { return false }
            tokens -= 1
            return true
        }

        /// Whether the bucket would be full at `now` (an entry of a user without connections can then go).
        func isFull(rate: Int, burst: Int, at now: ContinuousClock.Instant) -> Bool {
            var copy = self
            copy.refill(rate: rate, burst: burst, at: now)
            return copy.tokens >= Double(burst)
        }

        private mutating func refill(rate: Int, burst: Int, at now: ContinuousClock.Instant) {
            // `last` only moves forward: time that went backwards is not counted twice when it comes back.
            if now > last {
                let elapsed = now - last
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                tokens += seconds * Double(rate)
                last = now
            }
            tokens = min(max(tokens, 0), Double(burst))
        }
    }
}
