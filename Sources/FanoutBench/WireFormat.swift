import FanoutMQTT

/// The protocol a benchmark peer speaks, as far as the raw publish and delivery paths need it.
public enum WireFormat: Equatable {
    /// Fanout: `PUB <subject> <payload>\n` answered by `+OK <receivers>\n`; deliveries are
    /// `MSG <subject> <seq> <payload>\n`.
    case fanout
    /// Redis: `PUBLISH` as a RESP array answered by `:<receivers>\r\n`; deliveries are
    /// `*3\r\n$7\r\nmessage\r\n$<n>\r\n<channel>\r\n$<n>\r\n<payload>\r\n`.
    case redis
    /// Fanout over WebSocket, for subscribers only: deliveries are unmasked text frames, one `MSG` line each.
    case webSocket
    /// Fanout's Server-Sent Events, for subscribers only: deliveries are events, an optional `id:` line then
    /// `data: {"subject":...,"seq":...,"payload":"..."}` and a blank line.
    case eventStream
    /// NATS (core): `CONNECT {"verbose":true}` so that each `PUB <subject> <n>` is answered by `+OK`, which the
    /// window counts as Fanout's `+OK <receivers>`; deliveries are `MSG <subject> <sid> [reply] <n>`, CRLF, the
    /// payload, CRLF.
    case nats
    /// MQTT 3.1.1 at a QoS: each PUBLISH (topic `bench/<i>` for subject `bench.<i>`) is acknowledged by PUBACK
    /// (QoS 1) or PUBREC, PUBREL and PUBCOMP (QoS 2); at QoS 0, which MQTT never acknowledges, each PUBLISH is
    /// followed by a PINGREQ whose PINGRESP the window counts, as NATS's verbose `+OK`. Deliveries are PUBLISH
    /// packets, acknowledged as their QoS asks (`MQTTFrames`).
    case mqtt(MQTTQoS)

    /// The bytes around a payload of `payloadSize` bytes that make it a publish to `subject`; `binary` makes a
    /// Fanout publish a `BPUB` (protocol 1.2), whose payload may hold any bytes.
    func publishFrame(subject: String, payloadSize: Int, binary: Bool = false) -> (prefix: [UInt8], suffix: [UInt8]) {
        switch self {
        case .fanout, .webSocket, .eventStream:
            if binary { return (Array("BPUB \(subject) \(payloadSize)\n".utf8), [UInt8(ascii: "\n")]) }
            return (Array("PUB \(subject) ".utf8), [UInt8(ascii: "\n")])
        case .nats:
            return (Array("PUB \(subject) \(payloadSize)\r\n".utf8), [0x0D, 0x0A])
        case .mqtt(let qos):
            return MQTTFrames.publishFrame(topic: MQTTFrames.topic(of: subject), qos: qos, payloadSize: payloadSize)
        case .redis:
            var prefix: [UInt8] = []
            RESP.appendArrayHeader(3, to: &prefix)
            RESP.appendBulk("PUBLISH", to: &prefix)
            RESP.appendBulk(subject, to: &prefix)
            prefix += Array("$\(payloadSize)\r\n".utf8)
            return (prefix, [0x0D, 0x0A])
        }
    }
}
