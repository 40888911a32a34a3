import FanoutEventLoop

/// The protocol's listeners: plain and unix ones from `listen`, TLS ones with their context, or those that
/// socket activation handed over; the MQTT listeners beside them; and what an accept failure leaves behind.
struct ListenerSet {
    /// Bound from `configuration.listeners.listen`, by the address text that asked for them.
    var plain: [String: Listener] = [:]
    /// Bound from `configuration.tls.listen`, and the context their connections get.
    var tls: [String: Listener] = [:]
    var tlsContext: TLSContext?
    /// Handed over by socket activation; while there are any, `listen` is not bound.
    var inherited: [Listener] = []
    /// Bound from `configuration.mqtt.listen` (MQTT in the clear), by address text.
    var mqtt: [String: Listener] = [:]
    /// Bound from `configuration.mqtt.tlsListen`; their connections get `tlsContext` too.
    var mqttTLS: [String: Listener] = [:]
    /// MQTT listeners handed over by socket activation (named `mqtt` or `mqtts`); while there are any of a
    /// kind, its addresses are not bound.
    var inheritedMQTT: [Listener] = []
    var inheritedMQTTTLS: [Listener] = []
    /// Re-enables accepting after the process ran out of descriptors.
    var acceptRetryTimer: LoopTimer?
    /// Refused connections, logged once per interval at most.
    var refusalLog: LogThrottle?

    /// Every listener: those that serve the line protocol, then the MQTT ones.
    var all: [Listener] {
        inherited + plain.values + tls.values + inheritedMQTT + inheritedMQTTTLS + mqtt.values + mqttTLS.values
    }

    /// Stops accepting on every listener (shutdown, tear-down).
    mutating func stopAll() {
        plain.removeAll()
        tls.removeAll()
        inherited.removeAll()
        mqtt.removeAll()
        mqttTLS.removeAll()
        inheritedMQTT.removeAll()
        inheritedMQTTTLS.removeAll()
    }

    mutating func tearDown() {
        stopAll()
        acceptRetryTimer = nil
        refusalLog = nil
    }
}
