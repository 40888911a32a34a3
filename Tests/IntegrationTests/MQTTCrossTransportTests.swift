import Foundation
import Testing

/// paho-mqtt meeting fanout's other transports on one server (mqtt_cross_checks.py): a TCP line client, a
/// WebSocket, a Server-Sent Events stream; payload bytes unchanged, topics and subjects as docs/mqtt.md maps them.
@Suite("MQTT across transports", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTCrossTransportTests {
    private func expectPasses(_ check: String, arguments: [String] = [],
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (daemon, mqttPort) = try mqttDaemon(arguments: arguments)
        try expectMQTTCheckPasses("mqtt_cross_checks.py", check, daemon: daemon, mqttPort: mqttPort,
                                  sourceLocation: sourceLocation)
    }

    /// MQTT to TCP at QoS 0, 1 and 2: a line as MSG, a payload with LF and bytes 0x00-0xFF as BMSG, unchanged.
    @Test func mqttToTCP() throws { try expectPasses("mqtt-to-tcp") }

    /// TCP PUB and BPUB to MQTT at each filter QoS, bytes unchanged.
    @Test func tcpToMQTT() throws { try expectPasses("tcp-to-mqtt") }

    /// MQTT to a WebSocket (text MSG, binary BMSG frames) and a WebSocket's PUB and BPUB to MQTT.
    @Test func webSocketBothWays() throws { try expectPasses("websocket") }

    /// MQTT to `GET /events`: one event per PUBLISH, any bytes as payload_base64.
    @Test func mqttToEventStream() throws { try expectPasses("event-stream") }

    /// MQTT `+`/`#` receive fanout PUBs and fanout `*`/`>` MQTT PUBLISHes; `#` never `$SYS/x`; escaped levels
    /// (`/a`, `a//b`, `v1.2`, UTF-8, `*`) map both ways; a subject with no topic reaches no MQTT client.
    @Test func wildcardsAndEscapedLevels() throws { try expectPasses("wildcards") }

    /// With a users file: the right user and token (or `token`) connect; a wrong token or another user's gets
    /// CONNACK 4, no password 5; a denied filter SUBACK 0x80; a PUBLISH to a denied topic closes the connection.
    @Test func credentials() throws {
        try expectPasses("auth", arguments: ["--config", try fixture("auth.yaml")])
    }
}
