import DequeModule
import FanoutMQTT

/// The QoS 1 and 2 messages sent to one MQTT client and not yet acknowledged, by packet identifier, in the
/// order they were sent (a returning session gets them again in that order, MQTT-4.6.0-1).
///
/// Worst case: at most 65,535 entries (the packet identifiers; the transport drops a client that reaches it),
/// each holding its message (shared with the other receivers of the same run, not copied), and their bytes
/// counted in the connection's pending bytes, so max_pending_bytes bounds them long before that. Acknowledging
/// is O(1); `order` keeps acknowledged identifiers until they reach its front, and is compacted when it holds
/// more than twice the live entries (amortised O(1)).
struct MQTTInflight {
    private(set) var entries: [UInt16: MQTTUnacknowledged] = [:]
    private var order: Deque<UInt16> = []
    /// Bytes of the messages held (`MQTTMessage.weight`).
    private(set) var bytes = 0
    /// The next identifier to try.
    private var next: UInt16 = 1

    static let capacity = 65_535

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// A free packet identifier, or nil when all 65,535 are in use.
    mutating func takeID() -> UInt16? {
        guard entries.count < Self.capacity else { return nil }
        while entries[next] != nil { advance() }
        let id = next
        advance()
        return id
    }

    private mutating func advance() {
        next = next == UInt16.max ? 1 : next + 1
    }

    mutating func add(_ entry: MQTTUnacknowledged) {
        if entries.updateValue(entry, forKey: entry.packetID) == nil { order.append(entry.packetID) }
        bytes += entry.message.weight
        compactIfSparse()
    }

    /// Forgets the message with `id` (PUBACK, PUBCOMP); nil when none was waiting.
    @discardableResult
    mutating func remove(_ id: UInt16) -> MQTTUnacknowledged? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        bytes -= entry.message.weight
        while let first = order.first, entries[first] == nil { order.removeFirst() }
        return entry
    }

    /// QoS 2's PUBREC for `id`: only PUBCOMP is awaited now. False when no QoS 2 message has that identifier.
    mutating func release(_ id: UInt16) -> Bool {
        guard entries[id]?.message.qos == .exactlyOnce else { return false }
        entries[id]?.released = true
        return true
    }

    /// The messages in the order sent.
    var inOrder: [MQTTUnacknowledged] {
        order.compactMap { entries[$0] }
    }

    private mutating func compactIfSparse() {
        guard order.count > 2 * entries.count + 64 else { return }
        order = Deque(order.filter { entries[$0] != nil })
    }

    /// Starts from a kept session's messages and identifier.
    init(restoring unacknowledged: [MQTTUnacknowledged] = [], next: UInt16 = 1) {
        for entry in unacknowledged { add(entry) }
        self.next = next == 0 ? 1 : next
    }

    var nextID: UInt16 { next }

    /// Identifiers kept for the order, acknowledged ones among them (what `compactIfSparse` bounds).
    var orderCount: Int { order.count }
}
