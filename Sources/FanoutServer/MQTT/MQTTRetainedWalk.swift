import FanoutEventLoop
import FanoutMQTT

/// The retained messages a SUBSCRIBE's wildcard filters receive (MQTT-3.3.1-6), found a slice at a time: one
/// SUBSCRIBE of 1,000 wildcard filters over 10,000 retained messages is 10 million matches, seconds of the loop
/// if done at once. Each pass checks (subject, filter) pairs for at most `slice` of the loop's time, and the
/// connection's later packets wait until the walk is done (`ReadGate.Stops.commandsHeld`), so one connection
/// holds one walk at a time. Cost: O(retained × wildcard filters) in all, spread over the passes; memory, a copy
/// of the retained subjects' references.
final class MQTTRetainedWalk {
    /// A pass's share of the loop: well within `Server.turn`, so a bystander's PING waits at most this long.
    static let slice = Duration.milliseconds(2)

    private let subjects: [String]
    private let filters: [MQTTFilter]
    private var subjectIndex = 0
    private var timer: LoopTimer?

    init(subjects: [String], filters: [MQTTFilter]) {
        self.subjects = subjects
        self.filters = filters
    }

    /// Delivers the next slice through `deliver`; true when the walk is done.
    func step(_ retained: MQTTRetained, _ deliver: (MQTTMessage) -> Void) -> Bool {
        let started = ContinuousClock.now
        var checks = 0
        while subjectIndex < subjects.count {
            // The clock is read every 256 checks or so: a read costs what a few checks do.
            if checks >= 256 {
                checks = 0
                if ContinuousClock.now - started > Self.slice { break }
            }
            let subject = subjects[subjectIndex]
            subjectIndex += 1
            checks += filters.count
            for filter in filters {
                retained.visit(subject, for: filter.patterns) { subject, payload, qos in
                    guard let topic = MQTTTopicMapping.topic(forSubject: subject) else { return }
                    deliver(MQTTMessage(topic: topic, payload: payload, qos: min(qos, filter.qos)))
                }
            }
        }
        return subjectIndex >= subjects.count
    }

    /// Runs `next` on the next loop pass.
    func continueLater(on loop: EventLoop, _ next: @escaping () -> Void) {
        if timer == nil { timer = LoopTimer(loop: loop, action: next) }
        timer?.schedule(after: .zero)
    }
}
