/// What a benchmark run does: who publishes what to whom, how fast.
struct BenchScenario: Sendable {
    var publishers: Int
    var subscribers: Int
    /// Extra subscribers that subscribe and then never read (not counted as receivers of deliveries).
    var stalled: Int = 0
    var subjects: Int
    var payloadSize: Int
    var messages: Int
    /// Total publishes per second, or nil for as fast as the window allows.
    var rate: Int?
    /// Unacknowledged publishes per publisher.
    var window: Int
    /// How long delivery may make no progress after the last acknowledgement before the rest count as lost.
    var drainTimeout: Duration
    var timeout: Duration

    func subject(_ index: Int) -> String { "bench.\(index)" }

    /// Subscriber `index` listens to subject `index % subjects`.
    var subscribersPerSubject: [Int] {
        var counts = [Int](repeating: 0, count: subjects)
        for index in 0..<subscribers { counts[index % subjects] += 1 }
        return counts
    }

    /// Deliveries expected when every message reaches every subscriber of its subject.
    var expectedDeliveries: Int {
        let perSubject = subscribersPerSubject
        var total = 0
        for message in 0..<messages { total += perSubject[message % subjects] }
        return total
    }

    var summary: String {
        func plural(_ count: Int, _ word: String) -> String { "\(count) \(word)\(count == 1 ? "" : "s")" }
        var parts = [plural(publishers, "publisher"), plural(subscribers, "subscriber")]
        if stalled > 0 { parts.append("\(stalled) stalled") }
        parts += [plural(subjects, "subject"), "\(payloadSize)-byte payloads", plural(messages, "message"),
                  "window \(window)", rate.map { "\($0) msgs/s" } ?? "unthrottled"]
        return parts.joined(separator: ", ")
    }
}
