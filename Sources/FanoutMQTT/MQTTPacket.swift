/// One MQTT 3.1.1 control packet (OASIS standard, section 3), as the decoder hands it out and the encoder
/// writes it. Strings are already checked against the standard's UTF-8 rules (section 1.5.3); topics and
/// filters against its topic rules (section 4.7), so a listener only decides what to do with them.
///
/// Worst case per packet: a decoded packet holds at most its remaining length in bytes (the decoder's
/// `maxPacketSize` bounds it), plus, for SUBSCRIBE and UNSUBSCRIBE, one entry per filter, at most
/// `MQTTLimits.maxFiltersPerPacket` entries.
public enum MQTTPacket: Equatable, Sendable {
    /// A client's first packet (section 3.1).
    case connect(MQTTConnect)
    /// The server's answer to CONNECT (section 3.2).
    case connack(sessionPresent: Bool, returnCode: MQTTConnectReturnCode)
    /// A message, either way (section 3.3).
    case publish(MQTTPublish)
    /// Acknowledges a QoS 1 PUBLISH (section 3.4).
    case puback(packetID: UInt16)
    /// The first answer to a QoS 2 PUBLISH (section 3.5).
    case pubrec(packetID: UInt16)
    /// Its fixed header's flags are 0010 (MQTT-3.6.1-1).
    case pubrel(packetID: UInt16)
    /// The last packet of QoS 2's exchange (section 3.7).
    case pubcomp(packetID: UInt16)
    /// At least one and at most `MQTTLimits.maxFiltersPerPacket` filters; flags 0010 (MQTT-3.8.1-1).
    case subscribe(packetID: UInt16, subscriptions: [MQTTSubscription])
    /// One return code per filter of the SUBSCRIBE it answers, in order.
    case suback(packetID: UInt16, returnCodes: [MQTTSubackReturnCode])
    /// At least one and at most `MQTTLimits.maxFiltersPerPacket` filters; flags 0010 (MQTT-3.10.1-1).
    case unsubscribe(packetID: UInt16, filters: [String])
    /// Acknowledges an UNSUBSCRIBE (section 3.11).
    case unsuback(packetID: UInt16)
    /// A client's keep-alive probe (section 3.12), answered by PINGRESP (section 3.13).
    case pingreq
    case pingresp
    /// A client's clean goodbye: no will is published (section 3.14).
    case disconnect

    /// The packet type, the fixed header's high four bits (section 2.2.1).
    public var type: MQTTPacketType {
        switch self {
        case .connect: .connect
        case .connack: .connack
        case .publish: .publish
        case .puback: .puback
        case .pubrec: .pubrec
        case .pubrel: .pubrel
        case .pubcomp: .pubcomp
        case .subscribe: .subscribe
        case .suback: .suback
        case .unsubscribe: .unsubscribe
        case .unsuback: .unsuback
        case .pingreq: .pingreq
        case .pingresp: .pingresp
        case .disconnect: .disconnect
        }
    }
}

/// The fourteen packet types of section 2.2.1; 0 and 15 are reserved (forbidden).
public enum MQTTPacketType: UInt8, Sendable, CaseIterable {
    case connect = 1, connack, publish, puback, pubrec, pubrel, pubcomp, subscribe, suback, unsubscribe, unsuback
    case pingreq, pingresp, disconnect

    /// Whether a client may send this type to a server (the others flow from server to client only, except
    /// PUBLISH and its acknowledgements, which flow both ways).
    public var isSentByClients: Bool {
        switch self {
        case .connack, .suback, .unsuback, .pingresp: false
        default: true
        }
    }

    /// The fixed header's low four bits that section 2.2.2 requires (PUBLISH's are its own flags).
    var requiredFlags: UInt8? {
        switch self {
        case .publish: nil
        case .pubrel, .subscribe, .unsubscribe: 0b0010
        default: 0
        }
    }
}

/// Quality of service, section 4.3: 0 at most once, 1 at least once, 2 exactly once. The value 3 is
/// malformed wherever it appears.
public enum MQTTQoS: UInt8, Sendable, Comparable, CaseIterable {
    case atMostOnce = 0, atLeastOnce = 1, exactlyOnce = 2

    public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// CONNECT's will: published by the server when the connection ends without DISCONNECT (section 3.1.2.5).
public struct MQTTWill: Equatable, Sendable {
    /// A topic name: no wildcards, at least one byte.
    public var topic: String
    /// The payload published (binary data).
    public var message: [UInt8]
    public var qos: MQTTQoS
    /// Whether the will is published as a retained message.
    public var retain: Bool

    public init(topic: String, message: [UInt8], qos: MQTTQoS, retain: Bool) {
        self.topic = topic
        self.message = message
        self.qos = qos
        self.retain = retain
    }
}

/// CONNECT's fields (section 3.1), protocol name "MQTT" and level 4 already checked.
public struct MQTTConnect: Equatable, Sendable {
    /// May be empty (then `cleanSession` is true: MQTT-3.1.3-7/8 are checked by the decoder).
    public var clientID: String
    /// 1: the session lasts as long as the connection; 0: it is kept while the client is away (section 3.1.2.4).
    public var cleanSession: Bool
    /// Seconds; 0 turns the keep-alive off (section 3.1.2.10).
    public var keepAlive: UInt16
    /// Published if the connection ends without DISCONNECT.
    public var will: MQTTWill?
    /// A UTF-8 string, when the user name flag is set.
    public var username: String?
    /// Binary data, not a string (section 3.1.3.5); only present with a user name (MQTT-3.1.2-22).
    public var password: [UInt8]?

    public init(clientID: String, cleanSession: Bool, keepAlive: UInt16, will: MQTTWill? = nil,
                username: String? = nil, password: [UInt8]? = nil) {
        self.clientID = clientID
        self.cleanSession = cleanSession
        self.keepAlive = keepAlive
        self.will = will
        self.username = username
        self.password = password
    }
}

/// CONNACK's return codes (section 3.2.2.3); 6 to 255 are reserved.
public enum MQTTConnectReturnCode: UInt8, Sendable, CaseIterable {
    case accepted = 0
    case unacceptableProtocolVersion = 1
    case identifierRejected = 2
    case serverUnavailable = 3
    case badUsernameOrPassword = 4
    case notAuthorized = 5
}

/// PUBLISH's fields (section 3.3). `packetID` is present exactly when `qos` is 1 or 2, and then not 0.
public struct MQTTPublish: Equatable, Sendable {
    /// A topic name: no wildcards, at least one byte (MQTT-3.3.2-1, -2, 4.7.3-1).
    public var topic: String
    /// The application message's bytes, as they are (possibly empty).
    public var payload: [UInt8]
    public var qos: MQTTQoS
    /// Only with QoS 1 or 2 (MQTT-3.3.1-2): this is a redelivery.
    public var dup: Bool
    /// From a client: keep this as the topic's retained message; to a client: this is the retained message.
    public var retain: Bool
    /// The packet identifier, with QoS 1 and 2 only.
    public var packetID: UInt16?

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, dup: Bool = false,
                retain: Bool = false, packetID: UInt16? = nil) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.dup = dup
        self.retain = retain
        self.packetID = packetID
    }
}

/// One filter of a SUBSCRIBE and the QoS asked for it (section 3.8.3).
public struct MQTTSubscription: Equatable, Sendable {
    /// A topic filter whose wildcards stand where section 4.7.1 allows them.
    public var filter: String
    public var qos: MQTTQoS

    public init(filter: String, qos: MQTTQoS) {
        self.filter = filter
        self.qos = qos
    }
}

/// SUBACK's per-filter answer (section 3.9.3): the QoS granted, or failure.
public enum MQTTSubackReturnCode: Equatable, Sendable {
    case granted(MQTTQoS)
    case failure

    /// The byte on the wire: 0, 1, 2 or 0x80.
    public var byte: UInt8 {
        switch self {
        case .granted(let qos): qos.rawValue
        case .failure: 0x80
        }
    }

    /// The code a byte stands for; nil for the reserved values (MQTT-3.9.3-2).
    public init?(byte: UInt8) {
        if byte == 0x80 {
            self = .failure
        } else if let qos = MQTTQoS(rawValue: byte) {
            self = .granted(qos)
        } else {
            return nil
        }
    }
}

/// Bounds the decoder keeps whatever a peer sends.
public enum MQTTLimits {
    /// Filters in one SUBSCRIBE or UNSUBSCRIBE; one more is refused. The remaining length already bounds them
    /// (each takes at least 3 bytes in UNSUBSCRIBE, 4 in SUBSCRIBE), this bounds the work per packet.
    public static let maxFiltersPerPacket = 1_000
    /// The largest remaining length four bytes can encode (section 2.2.3).
    public static let maxRemainingLength = 268_435_455
    /// The longest UTF-8 string or binary field: its length prefix is two bytes (section 1.5.3).
    public static let maxStringLength = 65_535
}
