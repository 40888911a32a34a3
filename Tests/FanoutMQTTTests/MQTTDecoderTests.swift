import FanoutMQTT
import Testing

/// Every 3.1.1 packet type decoded from bytes written by hand after the standard's figures, whole and
/// split at every byte.
@Suite struct MQTTDecoderTests {
    /// Figure 3.6's variable header (flags 0xCE: user name, password, will QoS 1, will, clean session;
    /// keep alive 10) with a payload in section 3.1.3's order.
    static let connectBytes: [UInt8] = {
        let variable: [UInt8] = field("MQTT") + [0x04, 0xCE, 0x00, 0x0A]
        let payload = field("sensor-1") + field("status/sensor-1") + field("gone") + field("alice")
            + field([0x00, 0xFF, 0x70])
        let body = variable + payload
        return [0x10, UInt8(body.count)] + body
    }()

    static let expectedConnect = MQTTPacket.connect(MQTTConnect(
        clientID: "sensor-1", cleanSession: true, keepAlive: 10,
        will: MQTTWill(topic: "status/sensor-1", message: Array("gone".utf8), qos: .atLeastOnce, retain: false),
        username: "alice", password: [0x00, 0xFF, 0x70]))

    /// One of each type, by hand, and what each must decode to.
    static let cases: [(name: String, bytes: [UInt8], packet: MQTTPacket)] = [
        ("CONNECT", connectBytes, expectedConnect),
        ("CONNECT minimal", [0x10, 12] + field("MQTT") + [0x04, 0x02, 0x00, 0x3C] + field(""),
         .connect(MQTTConnect(clientID: "", cleanSession: true, keepAlive: 60))),
        ("CONNACK", [0x20, 0x02, 0x01, 0x00], .connack(sessionPresent: true, returnCode: .accepted)),
        ("CONNACK refused", [0x20, 0x02, 0x00, 0x05], .connack(sessionPresent: false, returnCode: .notAuthorized)),
        // Figure 3.11's topic "a/b" with packet identifier 10, QoS 1, DUP and RETAIN set.
        ("PUBLISH QoS 1", [0x3B, 9] + field("a/b") + [0x00, 0x0A] + [0x68, 0x69],
         .publish(MQTTPublish(topic: "a/b", payload: Array("hi".utf8), qos: .atLeastOnce, dup: true, retain: true,
                              packetID: 10))),
        ("PUBLISH QoS 0", [0x30, 7] + field("a/b") + [0x68, 0x69],
         .publish(MQTTPublish(topic: "a/b", payload: Array("hi".utf8)))),
        ("PUBLISH QoS 2 empty", [0x34, 7] + field("a/b") + [0xFF, 0xFF],
         .publish(MQTTPublish(topic: "a/b", payload: [], qos: .exactlyOnce, packetID: 0xFFFF))),
        ("PUBACK", [0x40, 0x02, 0x12, 0x34], .puback(packetID: 0x1234)),
        ("PUBREC", [0x50, 0x02, 0x00, 0x01], .pubrec(packetID: 1)),
        ("PUBREL", [0x62, 0x02, 0x00, 0x02], .pubrel(packetID: 2)),
        ("PUBCOMP", [0x70, 0x02, 0x00, 0x03], .pubcomp(packetID: 3)),
        // Figure 3.21's payload: "a/b" at QoS 1 and "c/d" at QoS 2.
        ("SUBSCRIBE", [0x82, 14, 0x00, 0x0A] + field("a/b") + [0x01] + field("c/d") + [0x02],
         .subscribe(packetID: 10, subscriptions: [MQTTSubscription(filter: "a/b", qos: .atLeastOnce),
                                                  MQTTSubscription(filter: "c/d", qos: .exactlyOnce)])),
        // Figure 3.26's return codes.
        ("SUBACK", [0x90, 6, 0x00, 0x0A, 0x00, 0x01, 0x02, 0x80],
         .suback(packetID: 10, returnCodes: [.granted(.atMostOnce), .granted(.atLeastOnce),
                                             .granted(.exactlyOnce), .failure])),
        // Figure 3.30's payload.
        ("UNSUBSCRIBE", [0xA2, 12, 0x00, 0x0B] + field("a/b") + field("c/d"),
         .unsubscribe(packetID: 11, filters: ["a/b", "c/d"])),
        ("UNSUBACK", [0xB0, 0x02, 0x00, 0x0B], .unsuback(packetID: 11)),
        ("PINGREQ", [0xC0, 0x00], .pingreq),
        ("PINGRESP", [0xD0, 0x00], .pingresp),
        ("DISCONNECT", [0xE0, 0x00], .disconnect),
    ]

    @Test(arguments: 0..<cases.count)
    func decodesEachTypeFromTheStandardsFigures(_ index: Int) {
        let (name, bytes, packet) = Self.cases[index]
        let outcome = decodeAll(bytes)
        #expect(outcome.failure == nil, "\(name)")
        #expect(outcome.packets == [packet], "\(name)")
        #expect(outcome.needed == nil || outcome.needed == 2, "\(name): a whole packet needs nothing more")
    }

    @Test(arguments: 0..<cases.count)
    func encoderWritesTheSameBytes(_ index: Int) {
        let (name, bytes, packet) = Self.cases[index]
        #expect(encoded(packet) == bytes, "\(name)")
    }

    @Test func everyTypeSplitAtEveryByteDecodesTheSame() {
        let stream = Self.cases.flatMap(\.bytes)
        let expected = Self.cases.map(\.packet)
        #expect(decodeAll(stream).packets == expected)
        for chunk in 1...7 {
            #expect(decodeAll(stream, chunk: chunk).packets == expected, "chunks of \(chunk)")
        }
        // Every single cut point of the whole stream, and every pair of cuts inside the CONNECT.
        for cut in 1..<stream.count {
            let outcome = decodeAll(stream, splits: [0, cut])
            #expect(outcome.packets == expected && outcome.failure == nil, "cut at \(cut)")
        }
        let connect = Self.connectBytes
        for first in 1..<connect.count {
            for second in first..<connect.count {
                #expect(decodeAll(connect, splits: [0, first, second]).packets == [Self.expectedConnect])
            }
        }
    }

    @Test func needMoreSaysWhatIsMissing() {
        var decoder = MQTTDecoder(maxPacketSize: 1000)
        let bytes = [0x30, 7] + field("a/b") + [0x68, 0x69]
        let none: [UInt8] = []
        #expect(none.withUnsafeBytes { decoder.decode($0) }.step == .needMore(2))
        let (step, consumed) = bytes[0..<4].withUnsafeBytes { decoder.decode($0) }
        #expect(step == .needMore(5) && consumed == 4)
        #expect(decoder.bufferedCount == 2)
        let rest = bytes[4...].withUnsafeBytes { decoder.decode($0) }
        #expect(rest.consumed == 5)
        #expect(rest.step == .packet(.publish(MQTTPublish(topic: "a/b", payload: Array("hi".utf8)))))
        #expect(decoder.bufferedCount == 0)
    }

    @Test func remainingLengthOfFourBytesIsRead() {
        // 2,097,152 = 0x80 0x80 0x80 0x01, the first four-byte value in table 2.4.
        let payload = [UInt8](repeating: 0x61, count: 2_097_152 - 3)
        let bytes: [UInt8] = [0x30, 0x80, 0x80, 0x80, 0x01] + field("t") + payload
        let outcome = decodeAll(bytes, chunk: 65_536, maxPacketSize: 3_000_000)
        #expect(outcome.failure == nil)
        // Compared as a whole rather than printed: a failure would otherwise print two million bytes.
        let same = outcome.packets == [.publish(MQTTPublish(topic: "t", payload: payload))]
        #expect(same, "\(outcome.packets.count) packets")
    }

    @Test func aWholePacketInOneBufferIsNotCopiedIntoTheDecoder() {
        let stream = Self.cases.flatMap(\.bytes)
        #expect(decodeAll(stream).maxBuffered == 0)
    }
}
