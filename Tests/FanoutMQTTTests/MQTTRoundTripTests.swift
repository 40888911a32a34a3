import FanoutMQTT
import FanoutTestSupport
import Testing

/// The encoder and decoder agree: random packets of every type, encoded one after another, decode to the
/// same packets however the stream is split; and the PUBLISH header serves many subscribers.
@Suite struct MQTTRoundTripTests {
    static let texts = ["", "a", "a/b", "sensor/1/temp", "é€𝄞", "$SYS/x", "a//b", "/", "x y", "~.~"]

    static func text(_ random: inout SeededGenerator, nonEmpty: Bool = false) -> String {
        let pick = texts.randomElement(using: &random)!
        let length = Bool.random(using: &random) ? Int.random(in: 0...300, using: &random) : 0
        let long = String(repeating: "z", count: length)
        let result = pick + long
        return nonEmpty && result.isEmpty ? "t" : result
    }

    static func bytes(_ random: inout SeededGenerator, upTo limit: Int) -> [UInt8] {
        (0..<Int.random(in: 0...limit, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    static func filter(_ random: inout SeededGenerator) -> String {
        ["#", "+", "a/+/c", "a/#", text(&random, nonEmpty: true), "$share/g/+/x"].randomElement(using: &random)!
    }

    static func qos(_ random: inout SeededGenerator) -> MQTTQoS { MQTTQoS.allCases.randomElement(using: &random)! }

    static func id(_ random: inout SeededGenerator) -> UInt16 { UInt16.random(in: 1...UInt16.max, using: &random) }

    static func packet(_ random: inout SeededGenerator) -> MQTTPacket {
        switch MQTTPacketType.allCases.randomElement(using: &random)! {
        case .connect:
            let clean = Bool.random(using: &random)
            let will = Bool.random(using: &random)
                ? MQTTWill(topic: text(&random, nonEmpty: true), message: bytes(&random, upTo: 40), qos: qos(&random),
                           retain: Bool.random(using: &random))
                : nil
            let username = Bool.random(using: &random) ? text(&random) : nil
            return .connect(MQTTConnect(
                clientID: clean ? text(&random) : text(&random, nonEmpty: true), cleanSession: clean,
                keepAlive: UInt16.random(in: 0...UInt16.max, using: &random), will: will, username: username,
                password: username != nil && Bool.random(using: &random) ? bytes(&random, upTo: 30) : nil))
        case .connack:
            return .connack(sessionPresent: Bool.random(using: &random),
                            returnCode: MQTTConnectReturnCode.allCases.randomElement(using: &random)!)
        case .publish:
            let level = qos(&random)
            return .publish(MQTTPublish(
                topic: text(&random, nonEmpty: true), payload: bytes(&random, upTo: 600), qos: level,
                dup: level != .atMostOnce && Bool.random(using: &random), retain: Bool.random(using: &random),
                packetID: level == .atMostOnce ? nil : id(&random)))
        case .puback: return .puback(packetID: id(&random))
        case .pubrec: return .pubrec(packetID: id(&random))
        case .pubrel: return .pubrel(packetID: id(&random))
        case .pubcomp: return .pubcomp(packetID: id(&random))
        case .subscribe:
            let subscriptions = (0..<Int.random(in: 1...5, using: &random)).map { _ in
                MQTTSubscription(filter: filter(&random), qos: qos(&random))
            }
            return .subscribe(packetID: id(&random), subscriptions: subscriptions)
        case .suback:
            let codes = (0..<Int.random(in: 1...5, using: &random)).map { _ in
                Bool.random(using: &random) ? MQTTSubackReturnCode.failure : .granted(qos(&random))
            }
            return .suback(packetID: id(&random), returnCodes: codes)
        case .unsubscribe:
            let filters = (0..<Int.random(in: 1...5, using: &random)).map { _ in filter(&random) }
            return .unsubscribe(packetID: id(&random), filters: filters)
        case .unsuback: return .unsuback(packetID: id(&random))
        case .pingreq: return .pingreq
        case .pingresp: return .pingresp
        case .disconnect: return .disconnect
        }
    }

    @Test func randomPacketsSurviveRandomSplits() {
        var random = SeededGenerator(seed: 311)
        for round in 0..<200 {
            let packets = (0..<Int.random(in: 1...20, using: &random)).map { _ in Self.packet(&random) }
            var stream: [UInt8] = []
            for packet in packets { MQTTEncoder.encode(packet, into: &stream) }
            var cuts = Set((0..<Int.random(in: 0...12, using: &random)).map { _ in
                Int.random(in: 0..<max(stream.count, 1), using: &random)
            })
            cuts.insert(0)
            let outcome = decodeAll(stream, splits: cuts.sorted())
            #expect(outcome.failure == nil, "round \(round): \(String(describing: outcome.failure))")
            #expect(outcome.packets == packets, "round \(round)")
            #expect(outcome.needed == 2, "round \(round): the stream ends between packets")
        }
    }

    @Test func onePublishHeaderServesManySubscribers() {
        let payload = Array("21.5".utf8)
        var header: [UInt8] = []
        let offset = MQTTEncoder.appendPublishHeader(topic: "room/1/temp", qos: .atLeastOnce, packetID: 1,
                                                     payloadCount: payload.count, into: &header)
        #expect(offset == header.count - 2)
        for packetID: UInt16 in [1, 2, 300, 0xFFFF] {
            MQTTEncoder.setPacketID(packetID, at: offset!, in: &header)
            let expected = MQTTPublish(topic: "room/1/temp", payload: payload, qos: .atLeastOnce, packetID: packetID)
            #expect(decodeAll(header + payload).packets == [.publish(expected)])
            #expect(header + payload == encoded(.publish(expected)))
        }
        var plain: [UInt8] = [0xAA]
        #expect(MQTTEncoder.appendPublishHeader(topic: "t", qos: .atMostOnce, payloadCount: 200, into: &plain) == nil)
        #expect(plain == [0xAA, 0x30, 0xCB, 0x01, 0x00, 0x01, 0x74], "appends after what the buffer held")
        #expect(MQTTEncoder.packetSize(remainingLength: 203) == plain.count - 1 + 200)
    }

    @Test func remainingLengthsAtTheStandardsBoundaries() {
        // Table 2.4: the largest value of each byte count.
        for (length, bytes) in [(0, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3), (2_097_151, 3),
                                (2_097_152, 4), (268_435_455, 4)] {
            #expect(MQTTEncoder.packetSize(remainingLength: length) == 1 + bytes + length, "\(length)")
        }
        var out: [UInt8] = []
        MQTTEncoder.encode(.publish(MQTTPublish(topic: "t", payload: [UInt8](repeating: 1, count: 16_380))), into: &out)
        #expect(Array(out.prefix(3)) == [0x30, 0xFF, 0x7F])
    }
}
