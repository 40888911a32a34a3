import Histogram

/// The outcome of one run against one server.
struct BenchResult {
    var target: String
    var published = 0
    var acknowledgedReceivers = 0
    var expected = 0
    var delivered = 0
    var publishSeconds = 0.0
    var deliverSeconds = 0.0
    /// Publish-to-receive latency in nanoseconds.
    var latency = Self.latencyHistogram()

    /// Nanoseconds up to a minute, to three significant digits.
    static func latencyHistogram() -> Histogram<UInt64> {
        Histogram(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }
    /// One delivery in this many was timed (per subscriber).
    var latencySampleEvery = 1
    /// The longest stretch with no delivery to any subscriber, from the first delivery to the last.
    var longestGapSeconds = 0.0

    var lost: Int { max(0, expected - delivered) }
    var publishedPerSecond: Double { publishSeconds > 0 ? Double(published) / publishSeconds : 0 }
    var deliveredPerSecond: Double { deliverSeconds > 0 ? Double(delivered) / deliverSeconds : 0 }

    static let percentiles: [(label: String, value: Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9)]

    /// Latency at a percentile, in microseconds.
    func latencyMicroseconds(_ percentile: Double) -> Double {
        latency.totalCount == 0 ? 0 : Double(latency.valueAtPercentile(percentile)) / 1000
    }

    var maxLatencyMicroseconds: Double { latency.totalCount == 0 ? 0 : Double(latency.max) / 1000 }

    var json: String {
        let latencies = Self.percentiles.map { ($0.label, String(format: "%.1f", latencyMicroseconds($0.value))) }
            + [("max", String(format: "%.1f", maxLatencyMicroseconds))]
        return JSON.object([
            ("target", JSON.string(target)),
            ("published", String(published)),
            ("published_per_s", String(format: "%.0f", publishedPerSecond)),
            ("expected", String(expected)),
            ("delivered", String(delivered)),
            ("delivered_per_s", String(format: "%.0f", deliveredPerSecond)),
            ("lost", String(lost)),
            ("latency_us", JSON.object(latencies)),
            ("latency_sampled_every", String(latencySampleEvery)),
            ("max_delivery_gap_ms", String(format: "%.1f", longestGapSeconds * 1000)),
        ])
    }
}

enum BenchReport {
    static func table(_ scenario: BenchScenario, _ results: [BenchResult]) -> String {
        var table = TextTable(headers: ["TARGET", "PUBLISHED/S", "DELIVERED/S", "LOST"]
                              + BenchResult.percentiles.map { "\($0.label)_US" } + ["MAX_US"])
        for result in results {
            table.rows.append([
                result.target, String(format: "%.0f", result.publishedPerSecond),
                String(format: "%.0f", result.deliveredPerSecond), String(result.lost),
            ] + BenchResult.percentiles.map { String(format: "%.1f", result.latencyMicroseconds($0.value)) }
              + [String(format: "%.1f", result.maxLatencyMicroseconds)])
        }
        if results.count == 2, results[1].publishedPerSecond > 0 {
            let deliveredRatio = results[1].deliveredPerSecond > 0
                ? String(format: "%.2fx", results[0].deliveredPerSecond / results[1].deliveredPerSecond) : "-"
            table.rows.append(["ratio (first/second)",
                               String(format: "%.2fx", results[0].publishedPerSecond / results[1].publishedPerSecond),
                               deliveredRatio, "", "", "", "", "", ""])
        }
        let sampling = results.first.map { $0.latencySampleEvery > 1 ? "; latency timed on 1 delivery in \($0.latencySampleEvery)" : "" } ?? ""
        return "scenario: \(scenario.summary)\(sampling)\n" + table.render()
    }

    static func json(_ scenario: BenchScenario, _ results: [BenchResult]) -> String {
        let scenarioJSON = JSON.object([
            ("publishers", String(scenario.publishers)), ("subscribers", String(scenario.subscribers)),
            ("stalled", String(scenario.stalled)),
            ("subjects", String(scenario.subjects)), ("payload_bytes", String(scenario.payloadSize)),
            ("messages", String(scenario.messages)), ("window", String(scenario.window)),
            ("rate", scenario.rate.map(String.init) ?? "null"),
        ])
        return "{\"scenario\":\(scenarioJSON),\"results\":[\(results.map(\.json).joined(separator: ","))]}"
    }
}
