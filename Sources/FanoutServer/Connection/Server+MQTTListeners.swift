import FanoutEventLoop

/// The MQTT listeners (mqtt_listen, mqtt_tls_listen, or sockets handed over as `mqtt` and `mqtts`): bound after
/// the protocol's, accepted by `acceptMQTT`, and kept in `listening` beside the protocol's so that pausing,
/// reloading and stopping treat them alike.
extension Server {
    /// Serves the MQTT listeners: those socket activation handed over, else mqtt_listen's and
    /// mqtt_tls_listen's addresses. TLS ones share the protocol's TLS context (made now if there is none).
    func startMQTT(inheritedFDs: [Int32], inheritedTLSFDs: [Int32]) throws {
        for (fds, tls) in [(inheritedFDs, false), (inheritedTLSFDs, true)] where !fds.isEmpty {
            if tls && listening.tlsContext == nil { listening.tlsContext = try makeTLSContext(configuration) }
            for fd in fds {
                let listener = try Listener(
                    loop: loop, listeningFD: fd,
                    onAccept: { [unowned self] fd, peer in self.acceptMQTT(fd: fd, peer: peer, tls: tls) },
                    onError: { [unowned self] error in self.acceptFailed(error) }
                )
                if tls { listening.inheritedMQTTTLS.append(listener) } else { listening.inheritedMQTT.append(listener) }
                logger.notice("listening on \(listener.address) (\(Self.mqttKind(tls: tls)), socket activation)")
            }
        }
        if listening.inheritedMQTT.isEmpty {
            for text in configuration.mqtt.listen { listening.mqtt[text] = try bind(text, mqtt: true) }
        }
        if listening.inheritedMQTTTLS.isEmpty && !configuration.mqtt.tlsListen.isEmpty {
            if listening.tlsContext == nil { listening.tlsContext = try makeTLSContext(configuration) }
            for text in configuration.mqtt.tlsListen { listening.mqttTLS[text] = try bind(text, tls: true, mqtt: true) }
        }
    }

    /// How a log line names an MQTT listener.
    static func mqttKind(tls: Bool) -> String { tls ? "mqtt, tls" : "mqtt" }
}
