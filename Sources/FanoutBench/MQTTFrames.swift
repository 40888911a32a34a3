import FanoutMQTT

/// The MQTT packets the load generator's raw paths write and read: a PUBLISH's bytes around its payload, the
/// acknowledgements of either side, and the walk over received packets. Worst case: a walk is linear in what it
/// is given, and a packet it cannot finish waits for more bytes.
enum MQTTFrames {
    /// `bench/<i>` for `bench.<i>`: the scenario's subjects have no byte the mapping escapes.
    static func topic(of subject: String) -> String {
        MQTTTopicMapping.topic(forSubject: subject) ?? subject
    }

    /// A PUBLISH's bytes before its payload (packet identifier 1, which `PublishPump` rewrites per publish at
    /// QoS 1 and 2: it is the prefix's last two bytes), and after it: a PINGREQ at QoS 0.
    static func publishFrame(topic: String, qos: MQTTQoS, payloadSize: Int) -> (prefix: [UInt8], suffix: [UInt8]) {
        var prefix: [UInt8] = []
        MQTTEncoder.appendPublishHeader(topic: topic, qos: qos, packetID: 1, payloadCount: payloadSize, into: &prefix)
        return (prefix, qos == .atMostOnce ? [0xC0, 0x00] : [])
    }

    /// One packet in `bytes` at `position`: its first byte, where its body lies, and where the next starts; nil
    /// while it is incomplete.
    static func packet(in bytes: UnsafeRawBufferPointer, at position: Int) -> (first: UInt8, body: Range<Int>)? {
        guard position + 2 <= bytes.count else { return nil }
        var length = 0
        var multiplier = 1
        var index = position + 1
        while true {
            guard index < bytes.count, index - position <= 4 else { return nil }
            let byte = bytes[index]
            length += Int(byte & 0x7F) * multiplier
            multiplier *= 128
            index += 1
            if byte & 0x80 == 0 { break }
        }
        guard index + length <= bytes.count else { return nil }
        return (bytes[position], index..<(index + length))
    }

    /// A packet identifier at the start of `body`.
    static func packetID(_ bytes: UnsafeRawBufferPointer, _ body: Range<Int>) -> UInt16 {
        UInt16(bytes[body.lowerBound]) << 8 | UInt16(bytes[body.lowerBound + 1])
    }

    /// A four-byte acknowledgement (PUBACK 0x40, PUBREC 0x50, PUBREL 0x62, PUBCOMP 0x70) appended to `out`.
    static func appendAcknowledgement(_ first: UInt8, _ id: UInt16, to out: inout [UInt8]) {
        out += [first, 2, UInt8(id >> 8), UInt8(id & 0xFF)]
    }

    /// MQTT 3.1.1's CONNECT with a clean session and no keep-alive.
    static func connect(clientID: String) -> [UInt8] {
        var out: [UInt8] = []
        MQTTEncoder.encode(.connect(MQTTConnect(clientID: clientID, cleanSession: true, keepAlive: 0)), into: &out)
        return out
    }
}
