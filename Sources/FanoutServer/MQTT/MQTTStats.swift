import FanoutMQTT

/// The MQTT listener's counters, for INFO and `/metrics`: packets by type each way, and what was dropped.
struct MQTTStats {
    /// Connections accepted on an MQTT listener and not yet gone (CONNECT or not).
    var connections = 0
    /// Packets received, indexed by `MQTTPacketType.rawValue` (0 and 15 unused).
    var packetsIn = [UInt64](repeating: 0, count: 16)
    /// Packets sent, indexed by `MQTTPacketType.rawValue`.
    var packetsOut = [UInt64](repeating: 0, count: 16)
    /// Messages not sent to an MQTT subscriber because their subject has no MQTT topic (`docs/mqtt.md`).
    var unmappable: UInt64 = 0
    /// Wills published (a client gone without DISCONNECT).
    var willsPublished: UInt64 = 0
    /// Messages a session away dropped, oldest first, past `mqtt_session_max_messages`.
    var sessionMessagesDropped: UInt64 = 0
    /// Sessions dropped past `mqtt_max_sessions` or after `mqtt_session_expiry`.
    var sessionsDropped: UInt64 = 0
    /// Retained messages refused past `mqtt_max_retained` (or max_memory).
    var retainedRefused: UInt64 = 0

    var packetsInTotal: UInt64 { packetsIn.reduce(0, +) }
    var packetsOutTotal: UInt64 { packetsOut.reduce(0, +) }
}
