/// CONNECT's variable header and payload (section 3.1), checked in the standard's order so that the
/// protocol name and level are judged before fields whose layout another level could change.
enum MQTTConnectParser {
    /// Connect flags (section 3.1.2.3).
    private static let reservedFlag: UInt8 = 0x01
    private static let cleanSessionFlag: UInt8 = 0x02
    private static let willFlag: UInt8 = 0x04
    private static let willRetainFlag: UInt8 = 0x20
    private static let passwordFlag: UInt8 = 0x40
    private static let usernameFlag: UInt8 = 0x80

    static func parse(_ reader: inout MQTTBodyReader) throws(MQTTDecodeError) -> MQTTConnect {
        let name = try reader.binary("protocol name")
        guard name.elementsEqual("MQTT".utf8) else {
            // MQTT 3.1's "MQIsdp" lands here too: the standard lets the server close (MQTT-3.1.2-1).
            throw .malformed("MQTT-3.1.2-1", "protocol name is not \"MQTT\"")
        }
        let level = try reader.byte("protocol level")
        guard level == 4 else {
            throw MQTTDecodeError(.unacceptableProtocolLevel, rule: "MQTT-3.1.2-2",
                                  "protocol level \(level); this server speaks level 4 (3.1.1)")
        }
        let flags = try reader.byte("connect flags")
        guard flags & reservedFlag == 0 else { throw .malformed("MQTT-3.1.2-3", "connect flags' reserved bit is set") }
        let willQoSBits = (flags >> 3) & 0b11
        let hasWill = flags & willFlag != 0
        if !hasWill {
            guard willQoSBits == 0 else { throw .malformed("MQTT-3.1.2-13", "a will QoS without the will flag") }
            guard flags & willRetainFlag == 0 else {
                throw .malformed("MQTT-3.1.2-15", "will retain without the will flag")
            }
        }
        guard let willQoS = MQTTQoS(rawValue: willQoSBits) else {
            throw .malformed("MQTT-3.1.2-14", "will QoS 3")
        }
        let hasUsername = flags & usernameFlag != 0
        let hasPassword = flags & passwordFlag != 0
        guard hasUsername || !hasPassword else {
            throw .malformed("MQTT-3.1.2-22", "a password flag without the user name flag")
        }
        let cleanSession = flags & cleanSessionFlag != 0
        let keepAlive = try reader.uint16("keep alive")

        let clientID = try reader.string("client identifier")
        if clientID.utf8.isEmpty && !cleanSession {
            throw MQTTDecodeError(.identifierRejected, rule: "MQTT-3.1.3-8",
                                  "an empty client identifier needs clean session 1")
        }
        var will: MQTTWill?
        if hasWill {
            let topic = try reader.string("will topic")
            try MQTTTopicRules.validateName(topic)
            let message = Array(try reader.binary("will message"))
            will = MQTTWill(topic: topic, message: message, qos: willQoS, retain: flags & willRetainFlag != 0)
        }
        let username = hasUsername ? try reader.string("user name") : nil
        let password = hasPassword ? Array(try reader.binary("password")) : nil
        return MQTTConnect(clientID: clientID, cleanSession: cleanSession, keepAlive: keepAlive, will: will,
                           username: username, password: password)
    }
}
