import FanoutMQTT
import FanoutProtocol

/// One MQTT connection's subscriptions by filter text, and the fanout patterns they hold (a pattern may serve
/// several filters: `a` and `a/#` both hold `a`), so that UNSUBSCRIBE drops only the patterns no other
/// filter still needs.
///
/// Worst case: as many filters as the connection may hold subscriptions (max_subscriptions bounds the patterns,
/// and each filter holds one or two). `grantedQoS` is O(1) while every filter has one QoS and no `$` rule
/// applies (the usual case), else O(filters) per publish run.
struct MQTTFilterTable {
    private(set) var filters: [String: MQTTFilter] = [:]
    /// How many filters hold each pattern.
    private var patternUsers: [String: Int] = [:]
    /// The QoS every filter has, when they all have the same one.
    private var uniformQoS: MQTTQoS?
    /// Whether some filter starts with a wildcard level, which must not match `$` subjects (MQTT-4.7.2-1).
    private var excludesDollar = false

    var isEmpty: Bool { filters.isEmpty }
    var all: [MQTTFilter] { Array(filters.values) }

    /// Adds or replaces the filter (MQTT-3.8.4-3: a SUBSCRIBE of a filter held replaces it); returns the
    /// patterns that are new to the connection.
    @discardableResult
    mutating func add(_ filter: MQTTFilter) -> [String] {
        // The same text maps to the same patterns: a replaced filter's are held already.
        var held: [String] = []
        if let previous = filters[filter.filter] {
            held = previous.patternList
            _ = remove(filter.filter)
        }
        filters[filter.filter] = filter
        var added: [String] = []
        for pattern in filter.patternList {
            patternUsers[pattern, default: 0] += 1
            if patternUsers[pattern] == 1 && !held.contains(pattern) { added.append(pattern) }
        }
        recompute()
        return added
    }

    /// Removes the filter; returns the patterns no filter holds any more (to UNSUB), empty when it was unknown.
    mutating func remove(_ text: String) -> [String] {
        guard let filter = filters.removeValue(forKey: text) else { return [] }
        var dropped: [String] = []
        for pattern in filter.patternList {
            let left = (patternUsers[pattern] ?? 1) - 1
            if left <= 0 {
                patternUsers[pattern] = nil
                dropped.append(pattern)
            } else {
                patternUsers[pattern] = left
            }
        }
        recompute()
        return dropped
    }

    private mutating func recompute() {
        let qualities = Set(filters.values.map(\.qos))
        uniformQoS = qualities.count == 1 ? qualities.first : nil
        excludesDollar = filters.values.contains { $0.patterns.excludesDollarSubjects }
    }

    /// The QoS a message of `subject` goes to this connection at (the highest of its matching filters', before
    /// the publisher's own is applied), or nil when no filter may deliver it (the `$` rule).
    func grantedQoS(for subject: String) -> MQTTQoS? {
        let dollar = subject.utf8.first == UInt8(ascii: "$")
        if let uniformQoS, !(dollar && excludesDollar) { return uniformQoS }
        var best: MQTTQoS?
        for filter in filters.values where filter.patterns.admits(subject: subject) {
            guard filter.patternList.contains(where: { Subject.matches(pattern: $0, subject: subject) }) else {
                continue
            }
            if best == nil || filter.qos > best! { best = filter.qos }
        }
        return best
    }
}
