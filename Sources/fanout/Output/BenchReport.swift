import FanoutBench
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// `fanout bench`'s output: a table for people, or one JSON object for scripts.
enum BenchReport {
    static func table(_ scenario: BenchScenario, _ results: [BenchResult]) -> String {
        var table = TextTable(headers: ["TARGET", "PUBLISHED/S", "DELIVERED/S", "LOST"]
                              + BenchResult.percentiles.map { "\($0.label)_US" } + ["MAX_US"])
        for result in results {
            table.rows.append([
                result.target, cFormat("%.0f", result.publishedPerSecond),
                cFormat("%.0f", result.deliveredPerSecond), String(result.lost),
            ] + BenchResult.percentiles.map { cFormat("%.1f", result.latencyMicroseconds($0.value)) }
              + [cFormat("%.1f", result.maxLatencyMicroseconds)])
        }
        if results.count == 2, results[1].publishedPerSecond > 0 {
            let deliveredRatio = results[1].deliveredPerSecond > 0
                ? cFormat("%.2fx", results[0].deliveredPerSecond / results[1].deliveredPerSecond) : "-"
            table.rows.append(["ratio (first/second)",
                               cFormat("%.2fx", results[0].publishedPerSecond / results[1].publishedPerSecond),
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
        return "{\"scenario\":\(scenarioJSON),\"results\":[\(results.map(json).joined(separator: ","))]}"
    }

    private static func json(_ result: BenchResult) -> String {
        let latencies = BenchResult.percentiles.map { percentile in
            (percentile.label, cFormat("%.1f", result.latencyMicroseconds(percentile.value)))
        } + [("max", cFormat("%.1f", result.maxLatencyMicroseconds))]
        return JSON.object([
            ("target", JSON.string(result.target)),
            ("published", String(result.published)),
            ("published_per_s", cFormat("%.0f", result.publishedPerSecond)),
            ("expected", String(result.expected)),
            ("delivered", String(result.delivered)),
            ("delivered_per_s", cFormat("%.0f", result.deliveredPerSecond)),
            ("lost", String(result.lost)),
            ("latency_us", JSON.object(latencies)),
            ("latency_sampled_every", String(result.latencySampleEvery)),
            ("max_delivery_gap_ms", cFormat("%.1f", result.longestGapSeconds * 1000)),
        ])
    }
}
