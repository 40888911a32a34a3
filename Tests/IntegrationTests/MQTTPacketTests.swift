import Foundation
import Testing

/// Malformed and out-of-order MQTT input, packet by packet (mqtt_malformed_checks.py): each case gets the refusal
/// the standard states, and the server goes on serving MQTT and TCP clients after every one.
@Suite("MQTT packets the server refuses", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTPacketTests {
    private func expectPasses(_ check: String, environment: [String: String] = [:],
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (daemon, mqttPort) = try Daemon.withMQTT(arguments: ["--http-listen", "127.0.0.1:0"],
                                                     environment: environment)
        try expectMQTTCheckPasses("mqtt_malformed_checks.py", check, daemon: daemon, mqttPort: mqttPort,
                                  sourceLocation: sourceLocation)
    }

    /// Protocol names and levels, an empty id with clean session 0, a second CONNECT, a first packet that is not
    /// CONNECT.
    @Test func connectRefusals() throws { try expectPasses("connect-refusals") }

    /// Five-byte remaining lengths, a packet over max_payload closed from its header, reserved types, wrong
    /// flags, QoS 3, packet id 0, server-only packets.
    @Test func framing() throws { try expectPasses("framing", environment: ["FANOUTD_MAX_PAYLOAD": "1024"]) }

    /// Invalid filters and topic names, 10,000 filters in one SUBSCRIBE, a subject past 255 bytes.
    @Test func topics() throws { try expectPasses("topics") }

    /// Every byte its own write: the same replies and message as whole packets.
    @Test func splitAtEveryByte() throws { try expectPasses("split-at-every-byte") }
}
