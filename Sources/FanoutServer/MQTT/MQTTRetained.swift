import FanoutMQTT
import FanoutProtocol
import Logging

/// What the retained messages need of the server.
protocol MQTTRetainedHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var mqttStats: MQTTStats { get set }
    var memory: MemoryGuard! { get }
}

/// MQTT's retained messages (section 3.3.1.3): the last retained PUBLISH of each subject, given to each new
/// subscription that matches it (MQTT-3.3.1-6) and to `LAST <subject>` when the subject's history has no
/// message to give (`Replays`).
///
/// Bounds: at most `mqtt_max_retained` subjects (a new subject past it is refused and counted; replacing one
/// held is always taken), their bytes held toward max_memory (`MemoryGuard.reserveHeld`: refused past it).
/// Cost: setting and clearing O(1); a new subscription's exact filter O(1), a wildcard filter a walk of every
/// retained message, O(mqtt_max_retained) at worst, once per SUBSCRIBE of it (`MQTTRetainedTests` holds it).
final class MQTTRetained {
    struct Entry {
        var payload: [UInt8]
        var qos: MQTTQoS
        /// When it was set, for dropping the oldest when a reload lowers the bound.
        var order: UInt64
        /// Bytes counted toward max_memory for it.
        var weight: Int { payload.count + 96 }
    }

    unowned let host: any MQTTRetainedHost
    private(set) var entries: [String: Entry] = [:]
    private var setCount: UInt64 = 0
    /// Bytes held toward max_memory.
    private(set) var bytes = 0
    /// Refusals since the last one logged: logged at most once per refusal burst, never per PUBLISH.
    private var refusalsUnlogged = 0

    init(host: any MQTTRetainedHost) {
        self.host = host
    }

    /// Retained messages kept.
    var count: Int { entries.count }

    /// A retained PUBLISH to `subject`: its payload becomes the subject's retained message; an empty one
    /// clears it (MQTT-3.3.1-10). `qos` is the PUBLISH's: a new subscription gets it at the lower of that and
    /// its own.
    func retain(subject: String, payload: [UInt8], qos: MQTTQoS) {
        let previous = entries[subject]
        guard !payload.isEmpty else {
            if let previous { forget(subject, previous) }
            return
        }
        let limit = host.configuration.mqtt.maxRetained
        let delta = payload.count + 96 - (previous?.weight ?? 0)
        if previous == nil && entries.count >= limit {
            return refuse(subject, "mqtt_max_retained=\(limit) retained messages are kept already")
        }
        if delta > 0 && !host.memory.reserveHeld(delta) {
            return refuse(subject, "the server is at max_memory=\(host.configuration.limits.maxMemory)")
        }
        if delta < 0 { host.memory.releaseHeld(-delta) }
        bytes += delta
        setCount += 1
        entries[subject] = Entry(payload: payload, qos: qos, order: setCount)
    }

    private func forget(_ subject: String, _ entry: Entry) {
        entries[subject] = nil
        bytes -= entry.weight
        host.memory.releaseHeld(entry.weight)
    }

    private func refuse(_ subject: String, _ reason: String) {
        host.mqttStats.retainedRefused &+= 1
        refusalsUnlogged += 1
        // Logged on the first refusal and then every 1,000th, so a flood of them costs no log line each.
        guard refusalsUnlogged == 1 || refusalsUnlogged % 1000 == 0 else { return }
        host.logger.warning("retained message not kept: \(reason)",
                            metadata: ["subject": "\(subject)", "refused": "\(refusalsUnlogged)"])
    }

    /// The retained message of `subject`, for `LAST`.
    func message(of subject: String) -> Entry? {
        entries[subject]
    }

    /// Calls `body` with each retained message of an exact filter (no wildcard): O(1). Returns false, calling
    /// nothing, for a wildcard filter, whose retained messages a `MQTTRetainedWalk` finds a slice at a time.
    func forEachExact(_ filter: MQTTFilterPatterns,
                      _ body: (_ subject: String, _ payload: [UInt8], _ qos: MQTTQoS) -> Void) -> Bool {
        let patterns = [filter.pattern] + (filter.parent.map { [$0] } ?? [])
        guard !patterns.contains(where: Subject.isWildcard) else { return false }
        for subject in patterns {
            if let entry = entries[subject] { body(subject, entry.payload, entry.qos) }
        }
        return true
    }

    /// The subjects held now, for a walk: a copy of their references, O(retained).
    var subjects: [String] { Array(entries.keys) }

    /// Calls `body` with each retained message a new subscription of `filter` receives (MQTT-3.3.1-6), in no
    /// particular order: its subject's patterns matching, and the `$` rule (MQTT-4.7.2-1) holding. O(retained)
    /// for a wildcard filter, all at once: the listener walks a slice at a time instead (`MQTTRetainedWalk`).
    func forEach(matching filter: MQTTFilterPatterns,
                 _ body: (_ subject: String, _ payload: [UInt8], _ qos: MQTTQoS) -> Void) {
        guard !entries.isEmpty, !forEachExact(filter, body) else { return }
        for subject in entries.keys { visit(subject, for: filter, body) }
    }

    /// Calls `body` when `subject` is still retained and `filter` receives it.
    func visit(_ subject: String, for filter: MQTTFilterPatterns,
               _ body: (_ subject: String, _ payload: [UInt8], _ qos: MQTTQoS) -> Void) {
        guard let entry = entries[subject], filter.admits(subject: subject),
              Subject.matches(pattern: filter.pattern, subject: subject)
                || filter.parent.map({ Subject.matches(pattern: $0, subject: subject) }) == true else { return }
        body(subject, entry.payload, entry.qos)
    }

    /// A reload lowered `mqtt_max_retained`: the oldest set go, counted as refused.
    func applyBound() {
        let limit = host.configuration.mqtt.maxRetained
        guard entries.count > limit else { return }
        let excess = entries.sorted { $0.value.order < $1.value.order }.prefix(entries.count - limit)
        for (subject, entry) in excess { forget(subject, entry) }
        host.mqttStats.retainedRefused &+= UInt64(excess.count)
        host.logger.notice("mqtt_max_retained=\(limit): \(excess.count) retained messages dropped, oldest first")
    }

    func tearDown() {
        if bytes > 0 { host.memory.releaseHeld(bytes) }
        bytes = 0
        entries.removeAll()
    }
}
