/// Turns one whole packet (its fixed header's first byte and the remaining-length bytes after the length)
/// into an `MQTTPacket`, applying section 3's rules for each type. Pure: the framing is `MQTTDecoder`'s.
enum MQTTPacketParser {
    static func parse(first: UInt8, body: UnsafeRawBufferPointer) throws(MQTTDecodeError) -> MQTTPacket {
        guard let type = MQTTPacketType(rawValue: first >> 4) else {
            throw .malformed("MQTT-2.2.1", "packet type \(first >> 4) is reserved")
        }
        let flags = first & 0x0F
        if let required = type.requiredFlags, flags != required {
            // Section 2.2.2: reserved flags that are not as specified make the packet malformed.
            let rule = type == .pubrel ? "MQTT-3.6.1-1" : type == .subscribe ? "MQTT-3.8.1-1"
                : type == .unsubscribe ? "MQTT-3.10.1-1" : "MQTT-2.2.2-2"
            throw .malformed(rule, "\(type) with fixed-header flags \(binary(flags)); they must be \(binary(required))")
        }
        var reader = MQTTBodyReader(body)
        let packet: MQTTPacket
        switch type {
        case .connect: packet = .connect(try MQTTConnectParser.parse(&reader))
        case .connack: packet = try connack(&reader)
        case .publish: packet = .publish(try publish(flags: flags, &reader))
        case .puback: packet = .puback(packetID: try reader.packetID())
        case .pubrec: packet = .pubrec(packetID: try reader.packetID())
        case .pubrel: packet = .pubrel(packetID: try reader.packetID())
        case .pubcomp: packet = .pubcomp(packetID: try reader.packetID())
        case .subscribe: packet = try subscribe(&reader)
        case .suback: packet = try suback(&reader)
        case .unsubscribe: packet = try unsubscribe(&reader)
        case .unsuback: packet = .unsuback(packetID: try reader.packetID())
        case .pingreq: packet = .pingreq
        case .pingresp: packet = .pingresp
        case .disconnect: packet = .disconnect
        }
        guard reader.isAtEnd else {
            throw .malformed("MQTT-2.2.3", "\(type) has \(reader.remaining) bytes past its fields")
        }
        return packet
    }

    private static func binary(_ flags: UInt8) -> String {
        String((0..<4).map { bit in (flags >> (3 - bit)) & 1 == 1 ? "1" : "0" })
    }

    private static func connack(_ reader: inout MQTTBodyReader) throws(MQTTDecodeError) -> MQTTPacket {
        let acknowledge = try reader.byte("acknowledge flags")
        guard acknowledge & 0xFE == 0 else {
            throw .malformed("MQTT-3.2.2", "CONNACK's acknowledge flags 1 to 7 are reserved")
        }
        let code = try reader.byte("return code")
        guard let returnCode = MQTTConnectReturnCode(rawValue: code) else {
            throw .malformed("MQTT-3.2.2.3", "CONNACK return code \(code) is reserved")
        }
        return .connack(sessionPresent: acknowledge == 1, returnCode: returnCode)
    }

    private static func publish(flags: UInt8, _ reader: inout MQTTBodyReader) throws(MQTTDecodeError) -> MQTTPublish {
        guard let qos = MQTTQoS(rawValue: (flags >> 1) & 0b11) else {
            throw .malformed("MQTT-3.3.1-4", "PUBLISH with both QoS bits set")
        }
        let dup = flags & 0b1000 != 0
        guard !(dup && qos == .atMostOnce) else { throw .malformed("MQTT-3.3.1-2", "PUBLISH QoS 0 with DUP set") }
        let topic = try reader.string("topic name")
        try MQTTTopicRules.validateName(topic)
        let packetID = qos == .atMostOnce ? nil : try reader.packetID()
        return MQTTPublish(topic: topic, payload: reader.rest(), qos: qos, dup: dup, retain: flags & 1 != 0,
                           packetID: packetID)
    }

    private static func subscribe(_ reader: inout MQTTBodyReader) throws(MQTTDecodeError) -> MQTTPacket {
        let packetID = try reader.packetID()
        var subscriptions: [MQTTSubscription] = []
        while !reader.isAtEnd {
            guard subscriptions.count < MQTTLimits.maxFiltersPerPacket else {
                throw .malformed("MQTT-3.8.3", "SUBSCRIBE with more than \(MQTTLimits.maxFiltersPerPacket) filters")
            }
            let filter = try reader.string("topic filter")
            try MQTTTopicRules.validateFilter(filter)
            let requested = try reader.byte("requested QoS")
            guard requested & 0xFC == 0, let qos = MQTTQoS(rawValue: requested) else {
                throw .malformed("MQTT-3.8.3-4", "requested QoS byte \(requested): reserved bits set or QoS 3")
            }
            subscriptions.append(MQTTSubscription(filter: filter, qos: qos))
        }
        guard !subscriptions.isEmpty else { throw .malformed("MQTT-3.8.3-3", "SUBSCRIBE without a topic filter") }
        return .subscribe(packetID: packetID, subscriptions: subscriptions)
    }

    private static func suback(_ reader: inout MQTTBodyReader) throws(MQTTDecodeError) -> MQTTPacket {
        let packetID = try reader.packetID()
        var codes: [MQTTSubackReturnCode] = []
        while !reader.isAtEnd {
            guard codes.count < MQTTLimits.maxFiltersPerPacket else {
                throw .malformed("MQTT-3.9.3", "SUBACK with more than \(MQTTLimits.maxFiltersPerPacket) return codes")
            }
            let byte = try reader.byte("return code")
            guard let code = MQTTSubackReturnCode(byte: byte) else {
                throw .malformed("MQTT-3.9.3-2", "SUBACK return code \(byte) is reserved")
            }
            codes.append(code)
        }
        guard !codes.isEmpty else { throw .malformed("MQTT-3.9.3", "SUBACK without a return code") }
        return .suback(packetID: packetID, returnCodes: codes)
    }

    private static func unsubscribe(_ reader: inout MQTTBodyReader) throws(MQTTDecodeError) -> MQTTPacket {
        let packetID = try reader.packetID()
        var filters: [String] = []
        while !reader.isAtEnd {
            guard filters.count < MQTTLimits.maxFiltersPerPacket else {
                throw .malformed("MQTT-3.10.3", "UNSUBSCRIBE with more than \(MQTTLimits.maxFiltersPerPacket) filters")
            }
            let filter = try reader.string("topic filter")
            try MQTTTopicRules.validateFilter(filter)
            filters.append(filter)
        }
        guard !filters.isEmpty else { throw .malformed("MQTT-3.10.3-2", "UNSUBSCRIBE without a topic filter") }
        return .unsubscribe(packetID: packetID, filters: filters)
    }
}
