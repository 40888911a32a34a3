/// Exponential backoff with jitter for reconnecting: attempt n waits about `initial * 2^(n-1)`, capped at
/// `maximum`, scaled by a random factor in `1 - jitter ... 1 + jitter` so that many clients cut off together
/// do not come back together.
public struct ReconnectPolicy: Sendable, Equatable {
    /// Whether to reconnect at all after losing the connection.
    public var enabled: Bool
    /// Delay before the first attempt.
    public var initialDelay: Duration
    /// Largest delay between attempts.
    public var maximumDelay: Duration
    /// Relative spread of each delay, 0 ... 1.
    public var jitter: Double

    public init(
        enabled: Bool = true, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5),
        jitter: Double = 0.5
    ) {
        self.enabled = enabled
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.jitter = min(max(jitter, 0), 1)
    }

    public static let never = ReconnectPolicy(enabled: false)

    /// The delay before attempt `attempt` (1-based), with `random` drawn from 0 ..< 1.
    public func delay(forAttempt attempt: Int, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let base = min(initialDelay * (1 << exponent), maximumDelay)
        let factor = 1 - jitter + 2 * jitter * random
        return base * factor
    }
}
