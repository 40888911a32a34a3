/// What a benchmark run does: who publishes what to whom, how fast.
public struct BenchScenario: Sendable {
    public var publishers: Int
    public var subscribers: Int
    /// Extra subscribers that subscribe and then never read (not counted as receivers of deliveries).
    public var stalled: Int
    public var subjects: Int
    public var payloadSize: Int
    public var messages: Int
    /// Total publishes per second, or nil for as fast as the window allows.
    public var rate: Int?
    /// Unacknowledged publishes per publisher.
    public var window: Int
    /// How long delivery may make no progress after the last acknowledgement before the rest count as lost.
    public var drainTimeout: Duration
    /// How long connecting and each reply may take.
    public var timeout: Duration
    /// The group (NATS: queue group) every subscriber joins, or nil for plain subscribers: each message then
    /// reaches one of them.
    public var group: String?
    /// Publish with `BPUB` a payload holding an LF, so that it is pushed as `BMSG` (Fanout 1.2); other
    /// protocols publish the same bytes their own way.
    public var binary: Bool
    /// Request/reply instead of publish/subscribe: publishers ask, subscribers answer (see `AskRun`).
    public var ask: AskSettings?

    public init(
        publishers: Int, subscribers: Int, stalled: Int = 0, subjects: Int, payloadSize: Int, messages: Int,
        rate: Int?, window: Int, drainTimeout: Duration, timeout: Duration, group: String? = nil,
        binary: Bool = false, ask: AskSettings? = nil
    ) {
        self.group = group
        self.binary = binary
        self.ask = ask
        self.publishers = publishers
        self.subscribers = subscribers
        self.stalled = stalled
        self.subjects = subjects
        self.payloadSize = payloadSize
        self.messages = messages
        self.rate = rate
        self.window = window
        self.drainTimeout = drainTimeout
        self.timeout = timeout
    }

    func subject(_ index: Int) -> String { "bench.\(index)" }

    /// Subscriber `index` listens to subject `index % subjects`; the receivers of one message to each subject
    /// (a group's members count once).
    var subscribersPerSubject: [Int] {
        var counts = [Int](repeating: 0, count: subjects)
        for index in 0..<subscribers { counts[index % subjects] += 1 }
        return group == nil ? counts : counts.map { min($0, 1) }
    }

    /// Deliveries expected when every message reaches every subscriber of its subject.
    var expectedDeliveries: Int {
        let perSubject = subscribersPerSubject
        var total = 0
        for message in 0..<messages { total += perSubject[message % subjects] }
        return total
    }

    public var summary: String {
        func plural(_ count: Int, _ word: String) -> String { "\(count) \(word)\(count == 1 ? "" : "s")" }
        var parts = ask == nil ? [plural(publishers, "publisher"), plural(subscribers, "subscriber")]
            : [plural(publishers, "asker"), plural(subscribers, "responder")]
        if let group { parts.append("in group \(group)") }
        if stalled > 0 { parts.append("\(stalled) stalled") }
        if binary { parts.append("BPUB") }
        if let ask {
            parts.append("max-answers \(ask.maxAnswers)")
            parts.append("ask timeout \(ask.timeoutMilliseconds) ms")
        }
        parts += [plural(subjects, "subject"), "\(payloadSize)-byte payloads", plural(messages, "message"),
                  "window \(window)", rate.map { "\($0) msgs/s" } ?? "unthrottled"]
        return parts.joined(separator: ", ")
    }
}

/// The questions of a request/reply run.
public struct AskSettings: Sendable {
    /// `ASK`'s `<max-answers>`: 0 waits for every receiver (or the timeout), 1 closes at the first answer.
    public var maxAnswers: Int
    /// `ASK`'s `<timeout-ms>`.
    public var timeoutMilliseconds: Int

    public init(maxAnswers: Int, timeoutMilliseconds: Int) {
        self.maxAnswers = maxAnswers
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}
