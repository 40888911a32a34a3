/// Writes MQTT 3.1.1 packets into a caller's byte buffer (appending, never clearing it). Every packet type
/// can be written (the server sends CONNACK, PUBLISH, its acknowledgements, SUBACK, UNSUBACK and PINGRESP;
/// the rest serve a client peer and the round-trip tests).
///
/// PUBLISH is written in two parts for the fan-out: `appendPublishHeader` writes the fixed header, the topic
/// and the packet identifier, and the caller appends (or sends from its own storage) the payload. The same
/// header bytes then serve every subscriber of one QoS: with QoS 0 they are identical; with QoS 1 and 2 only
/// the two bytes at the returned offset differ, which `setPacketID` rewrites in place.
///
/// The caller's fields must fit the standard (strings and binary fields of at most 65,535 bytes, a remaining
/// length of at most 268,435,455): a field that does not is a programming error and traps.
public enum MQTTEncoder {
    /// Appends `packet`.
    public static func encode(_ packet: MQTTPacket, into out: inout [UInt8]) {
        switch packet {
        case .connect(let connect):
            MQTTConnectEncoder.encode(connect, into: &out)
        case .connack(let sessionPresent, let returnCode):
            out += [0x20, 2, sessionPresent ? 1 : 0, returnCode.rawValue]
        case .publish(let publish):
            appendPublishHeader(topic: publish.topic, qos: publish.qos, dup: publish.dup, retain: publish.retain,
                                packetID: publish.packetID ?? 0, payloadCount: publish.payload.count, into: &out)
            out += publish.payload
        case .puback(let id): appendAcknowledgement(.puback, id, into: &out)
        case .pubrec(let id): appendAcknowledgement(.pubrec, id, into: &out)
        case .pubrel(let id): appendAcknowledgement(.pubrel, id, into: &out)
        case .pubcomp(let id): appendAcknowledgement(.pubcomp, id, into: &out)
        case .unsuback(let id): appendAcknowledgement(.unsuback, id, into: &out)
        case .subscribe(let id, let subscriptions):
            let length = 2 + subscriptions.reduce(0) { $0 + 2 + $1.filter.utf8.count + 1 }
            appendFixedHeader(.subscribe, flags: 0b0010, remainingLength: length, into: &out)
            appendUInt16(id, into: &out)
            for subscription in subscriptions {
                appendString(subscription.filter, into: &out)
                out.append(subscription.qos.rawValue)
            }
        case .suback(let id, let returnCodes):
            appendFixedHeader(.suback, flags: 0, remainingLength: 2 + returnCodes.count, into: &out)
            appendUInt16(id, into: &out)
            for code in returnCodes { out.append(code.byte) }
        case .unsubscribe(let id, let filters):
            let length = 2 + filters.reduce(0) { $0 + 2 + $1.utf8.count }
            appendFixedHeader(.unsubscribe, flags: 0b0010, remainingLength: length, into: &out)
            appendUInt16(id, into: &out)
            for filter in filters { appendString(filter, into: &out) }
        case .pingreq: out += [0xC0, 0]
        case .pingresp: out += [0xD0, 0]
        case .disconnect: out += [0xE0, 0]
        }
    }

    /// Appends a PUBLISH's fixed header, topic name and (for QoS 1 and 2) packet identifier, for a payload of
    /// `payloadCount` bytes that the caller sends right after. Returns the offset in `out` of the packet
    /// identifier's two bytes (nil for QoS 0, which has none).
    @discardableResult
    public static func appendPublishHeader(topic: String, qos: MQTTQoS, dup: Bool = false, retain: Bool = false,
                                           packetID: UInt16 = 0, payloadCount: Int,
                                           into out: inout [UInt8]) -> Int? {
        let hasID = qos != .atMostOnce
        let length = 2 + topic.utf8.count + (hasID ? 2 : 0) + payloadCount
        let flags = (dup ? 0b1000 : 0) | qos.rawValue << 1 | (retain ? 1 : 0)
        appendFixedHeader(.publish, flags: flags, remainingLength: length, into: &out)
        appendString(topic, into: &out)
        guard hasID else { return nil }
        let offset = out.count
        appendUInt16(packetID, into: &out)
        return offset
    }

    /// Rewrites the packet identifier that `appendPublishHeader` placed at `offset`.
    public static func setPacketID(_ packetID: UInt16, at offset: Int, in bytes: inout [UInt8]) {
        bytes[offset] = UInt8(packetID >> 8)
        bytes[offset + 1] = UInt8(packetID & 0xFF)
    }

    /// The bytes a packet with this remaining length takes in all (the fixed header included).
    public static func packetSize(remainingLength: Int) -> Int {
        1 + remainingLengthBytes(remainingLength) + remainingLength
    }

    static func appendFixedHeader(_ type: MQTTPacketType, flags: UInt8, remainingLength: Int,
                                  into out: inout [UInt8]) {
        precondition(remainingLength >= 0 && remainingLength <= MQTTLimits.maxRemainingLength,
                     "remaining length \(remainingLength) cannot be encoded")
        out.append(type.rawValue << 4 | flags)
        var value = remainingLength
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value > 0 { byte |= 0x80 }
            out.append(byte)
        } while value > 0
    }

    static func remainingLengthBytes(_ length: Int) -> Int {
        length < 128 ? 1 : length < 16_384 ? 2 : length < 2_097_152 ? 3 : 4
    }

    static func appendAcknowledgement(_ type: MQTTPacketType, _ id: UInt16, into out: inout [UInt8]) {
        out += [type.rawValue << 4 | (type == .pubrel ? 0b0010 : 0), 2, UInt8(id >> 8), UInt8(id & 0xFF)]
    }

    static func appendUInt16(_ value: UInt16, into out: inout [UInt8]) {
        out += [UInt8(value >> 8), UInt8(value & 0xFF)]
    }

    static func appendString(_ text: String, into out: inout [UInt8]) {
        appendBinary(text.utf8, into: &out)
    }

    static func appendBinary(_ bytes: some Collection<UInt8>, into out: inout [UInt8]) {
        precondition(bytes.count <= MQTTLimits.maxStringLength, "a field of \(bytes.count) bytes cannot be encoded")
        appendUInt16(UInt16(bytes.count), into: &out)
        out += bytes
    }
}

/// CONNECT's encoding, for a client peer and the tests.
enum MQTTConnectEncoder {
    static func encode(_ connect: MQTTConnect, into out: inout [UInt8]) {
        var flags: UInt8 = connect.cleanSession ? 0x02 : 0
        var length = 10 + 2 + connect.clientID.utf8.count
        if let will = connect.will {
            flags |= 0x04 | will.qos.rawValue << 3 | (will.retain ? 0x20 : 0)
            length += 2 + will.topic.utf8.count + 2 + will.message.count
        }
        if let username = connect.username {
            flags |= 0x80
            length += 2 + username.utf8.count
        }
        if let password = connect.password {
            flags |= 0x40
            length += 2 + password.count
        }
        MQTTEncoder.appendFixedHeader(.connect, flags: 0, remainingLength: length, into: &out)
        MQTTEncoder.appendString("MQTT", into: &out)
        out += [4, flags]
        MQTTEncoder.appendUInt16(connect.keepAlive, into: &out)
        MQTTEncoder.appendString(connect.clientID, into: &out)
        if let will = connect.will {
            MQTTEncoder.appendString(will.topic, into: &out)
            MQTTEncoder.appendBinary(will.message, into: &out)
        }
        if let username = connect.username { MQTTEncoder.appendString(username, into: &out) }
        if let password = connect.password { MQTTEncoder.appendBinary(password, into: &out) }
    }
}
