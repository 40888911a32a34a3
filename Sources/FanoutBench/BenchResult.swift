import Histogram

/// The outcome of one run against one server.
public struct BenchResult {
    public var target: String
    public var published = 0
    var acknowledgedReceivers = 0
    public var expected = 0
    public var delivered = 0
    var publishSeconds = 0.0
    var deliverSeconds = 0.0
    /// Publish-to-receive latency in nanoseconds.
    var latency = Self.latencyHistogram()

    /// Nanoseconds up to a minute, to three significant digits.
    static func latencyHistogram() -> Histogram<UInt64> {
        Histogram(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }
    /// One delivery in this many was timed (per subscriber).
    public var latencySampleEvery = 1
    /// The longest stretch with no delivery to any subscriber, from the first delivery to the last.
    public var longestGapSeconds = 0.0

    public var lost: Int { max(0, expected - delivered) }
    public var publishedPerSecond: Double { publishSeconds > 0 ? Double(published) / publishSeconds : 0 }
    public var deliveredPerSecond: Double { deliverSeconds > 0 ? Double(delivered) / deliverSeconds : 0 }

    public static let percentiles: [(label: String, value: Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9)]

    /// Latency at a percentile, in microseconds.
    public func latencyMicroseconds(_ percentile: Double) -> Double {
        latency.totalCount == 0 ? 0 : Double(latency.valueAtPercentile(percentile)) / 1000
    }

    public var maxLatencyMicroseconds: Double { latency.totalCount == 0 ? 0 : Double(latency.max) / 1000 }
}
