import FanoutMQTT
import Testing

/// Malformed input issue 40 lists, and every other rule the decoder enforces: each is refused with the kind
/// the listener needs and the rule it broke, whole and split at every byte.
@Suite struct MQTTMalformedTests {
    static func connect(name: String = "MQTT", level: UInt8 = 4, flags: UInt8 = 0x02,
                        payload: [UInt8] = field("c")) -> [UInt8] {
        let body = field(name) + [level, flags, 0x00, 0x3C] + payload
        return [0x10, UInt8(body.count)] + body
    }

    static func publish(topic: [UInt8], flags: UInt8 = 0x30) -> [UInt8] {
        let body = field(topic) + (flags & 0x06 != 0 ? [0x00, 0x01] : []) + [0x21]
        return [flags, UInt8(body.count)] + body
    }

    static func subscribe(_ filter: String, qos: UInt8 = 0, id: [UInt8] = [0x00, 0x01]) -> [UInt8] {
        let body = id + field(filter) + [qos]
        return [0x82, UInt8(body.count)] + body
    }

    static let cases: [(bytes: [UInt8], kind: MQTTDecodeError.Kind, rule: String)] = [
        // CONNECT: protocol name, level, flags, client identifier.
        (connect(name: "MQIsdp", level: 3), .malformed, "MQTT-3.1.2-1"),
        (connect(name: "MQTX"), .malformed, "MQTT-3.1.2-1"),
        (connect(level: 3), .unacceptableProtocolLevel, "MQTT-3.1.2-2"),
        (connect(level: 5, payload: [0x00] + field("c")), .unacceptableProtocolLevel, "MQTT-3.1.2-2"),
        (connect(flags: 0x03), .malformed, "MQTT-3.1.2-3"),
        (connect(flags: 0x0A), .malformed, "MQTT-3.1.2-13"),
        (connect(flags: 0x1E, payload: field("c") + field("t") + field("m")), .malformed, "MQTT-3.1.2-14"),
        (connect(flags: 0x22), .malformed, "MQTT-3.1.2-15"),
        (connect(flags: 0x42, payload: field("c") + field("p")), .malformed, "MQTT-3.1.2-22"),
        (connect(flags: 0x00, payload: field("")), .identifierRejected, "MQTT-3.1.3-8"),
        (connect(flags: 0x06, payload: field("c") + field("a/+") + field("m")), .malformed, "MQTT-3.3.2-2"),
        (connect(payload: field("c") + [0x01]), .malformed, "MQTT-2.2.3"),
        (connect(payload: [0x00, 0x09, 0x61]), .malformed, "MQTT-1.5.3"),
        // The fixed header: reserved types, reserved flags, the remaining length.
        ([0x00, 0x00], .malformed, "MQTT-2.2.1"),
        ([0xF0, 0x00], .malformed, "MQTT-2.2.1"),
        ([0x11] + connect().dropFirst(), .malformed, "MQTT-2.2.2-2"),
        ([0x60, 0x02, 0x00, 0x01], .malformed, "MQTT-3.6.1-1"),
        ([0x80] + subscribe("a").dropFirst(), .malformed, "MQTT-3.8.1-1"),
        ([0xA0, 0x05, 0x00, 0x01] + field("a"), .malformed, "MQTT-3.10.1-1"),
        ([0x41, 0x02, 0x00, 0x01], .malformed, "MQTT-2.2.2-2"),
        ([0xC1, 0x00], .malformed, "MQTT-2.2.2-2"),
        ([0xE2, 0x00], .malformed, "MQTT-2.2.2-2"),
        ([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], .malformed, "MQTT-2.2.3"),
        ([0x40, 0x03, 0x00, 0x01, 0x00], .malformed, "MQTT-2.2.3"),
        ([0x40, 0x01, 0x00], .malformed, "MQTT-2.2.3"),
        ([0xC0, 0x01, 0x00], .malformed, "MQTT-2.2.3"),
        // PUBLISH: QoS bits, DUP, packet identifier, topic name.
        (publish(topic: Array("a".utf8), flags: 0x36), .malformed, "MQTT-3.3.1-4"),
        (publish(topic: Array("a".utf8), flags: 0x38), .malformed, "MQTT-3.3.1-2"),
        ([0x32, 0x05] + field("a") + [0x00, 0x00], .malformed, "MQTT-2.3.1-1"),
        (publish(topic: []), .malformed, "MQTT-4.7.3-1"),
        (publish(topic: Array("a/#".utf8)), .malformed, "MQTT-3.3.2-2"),
        (publish(topic: Array("+".utf8)), .malformed, "MQTT-3.3.2-2"),
        // Invalid UTF-8 and U+0000 in topics: overlong, surrogate, stray byte, truncated sequence, over U+10FFFF.
        (publish(topic: [0x61, 0xC0, 0xAF]), .malformed, "MQTT-1.5.3-1"),
        (publish(topic: [0xED, 0xA0, 0x80]), .malformed, "MQTT-1.5.3-1"),
        (publish(topic: [0x61, 0xFF]), .malformed, "MQTT-1.5.3-1"),
        (publish(topic: [0x61, 0xE2, 0x82]), .malformed, "MQTT-1.5.3-1"),
        (publish(topic: [0xF4, 0x90, 0x80, 0x80]), .malformed, "MQTT-1.5.3-1"),
        (publish(topic: [0x61, 0x00, 0x62]), .malformed, "MQTT-1.5.3-2"),
        (subscribe("a/\u{0}"), .malformed, "MQTT-1.5.3-2"),
        // Acknowledgements with packet identifier 0.
        ([0x40, 0x02, 0x00, 0x00], .malformed, "MQTT-2.3.1-1"),
        ([0x62, 0x02, 0x00, 0x00], .malformed, "MQTT-2.3.1-1"),
        // SUBSCRIBE and UNSUBSCRIBE: no filter, requested QoS, packet identifier, wildcard placement.
        ([0x82, 0x02, 0x00, 0x01], .malformed, "MQTT-3.8.3-3"),
        (subscribe("a", qos: 3), .malformed, "MQTT-3.8.3-4"),
        (subscribe("a", qos: 0x04), .malformed, "MQTT-3.8.3-4"),
        (subscribe("a", id: [0, 0]), .malformed, "MQTT-2.3.1-1"),
        (subscribe(""), .malformed, "MQTT-4.7.3-1"),
        (subscribe("a/#/b"), .malformed, "MQTT-4.7.1-2"),
        (subscribe("a#"), .malformed, "MQTT-4.7.1-2"),
        (subscribe("#/"), .malformed, "MQTT-4.7.1-2"),
        (subscribe("a/b+"), .malformed, "MQTT-4.7.1-3"),
        (subscribe("+a/b"), .malformed, "MQTT-4.7.1-3"),
        (subscribe("a/+b/c"), .malformed, "MQTT-4.7.1-3"),
        ([0xA2, 0x02, 0x00, 0x01], .malformed, "MQTT-3.10.3-2"),
        ([0xA2, 0x06, 0x00, 0x01] + field("a+"), .malformed, "MQTT-4.7.1-3"),
        // Server packets: reserved CONNACK flags and codes, SUBACK codes.
        ([0x20, 0x02, 0x02, 0x00], .malformed, "MQTT-3.2.2"),
        ([0x20, 0x02, 0x00, 0x06], .malformed, "MQTT-3.2.2.3"),
        ([0x90, 0x03, 0x00, 0x01, 0x03], .malformed, "MQTT-3.9.3-2"),
    ]

    @Test(arguments: 0..<cases.count)
    func refusedWithItsRuleHoweverSplit(_ index: Int) {
        let (bytes, kind, rule) = Self.cases[index]
        for chunk in [Int.max, 1, 2, 3] {
            let outcome = decodeAll(bytes, chunk: chunk)
            #expect(outcome.packets.isEmpty, "case \(index)")
            let context = "case \(index), chunk \(chunk): \(String(describing: outcome.failure))"
            #expect(outcome.failure?.kind == kind, "\(context)")
            #expect(outcome.failure?.rule == rule, "\(context)")
        }
    }

    @Test func aPacketOverTheMaximumIsRefusedFromItsFixedHeader() {
        // 200 bytes announced, 100 allowed: refused after the two header bytes, nothing buffered.
        var decoder = MQTTDecoder(maxPacketSize: 100)
        let bytes: [UInt8] = [0x30, 0xC6, 0x01] + [UInt8](repeating: 0x61, count: 198)
        let (step, consumed) = bytes.withUnsafeBytes { decoder.decode($0) }
        guard case .failure(let error) = step else {
            Issue.record("expected a failure, got \(step)")
            return
        }
        #expect(error.kind == .tooLarge)
        #expect(consumed == 3)
        #expect(decoder.bufferedCount == 0)
        // The largest packet allowed passes: 100 bytes in all.
        let fits: [UInt8] = [0x30, 98] + field("t") + [UInt8](repeating: 0x61, count: 95)
        #expect(decodeAll(fits, chunk: 7, maxPacketSize: 100).packets.count == 1)
        #expect(decodeAll([0x30, 99] + fits.dropFirst(2) + [0x61], maxPacketSize: 100).failure?.kind == .tooLarge)
    }

    @Test func aFailureIsStickyUntilReset() {
        var decoder = MQTTDecoder(maxPacketSize: 100)
        let bad: [UInt8] = [0x00, 0x00]
        #expect(bad.withUnsafeBytes { decoder.decode($0) }.consumed == 1)
        let ping: [UInt8] = [0xC0, 0x00]
        let again = ping.withUnsafeBytes { decoder.decode($0) }
        #expect(again.consumed == 0)
        guard case .failure = again.step else {
            Issue.record("a refused stream decoded on")
            return
        }
        decoder.reset()
        #expect(ping.withUnsafeBytes { decoder.decode($0) }.step == .packet(.pingreq))
    }

    /// 10,000 filters: refused after the 1,000th, holding no more than the packet's own remaining length.
    @Test func aSubscribeWithTenThousandFiltersIsRefusedWithinItsBound() {
        var body: [UInt8] = [0x00, 0x01]
        for index in 0..<10_000 { body += field("f\(index % 10)") + [0x00] }
        var bytes: [UInt8] = [0x82]
        var length = body.count
        repeat {
            bytes.append(UInt8(length & 0x7F) | (length > 0x7F ? 0x80 : 0))
            length >>= 7
        } while length > 0
        bytes += body
        let outcome = decodeAll(bytes, chunk: 4096)
        #expect(outcome.failure?.kind == .malformed)
        #expect(outcome.failure?.rule == "MQTT-3.8.3")
        #expect(outcome.maxBuffered <= body.count)
        // A server passing a smaller maximum refuses it before buffering any of it.
        let small = decodeAll(bytes, chunk: 4096, maxPacketSize: 4096)
        #expect(small.failure?.kind == .tooLarge && small.maxBuffered == 0)
        // 1,000 filters are the most, and are taken.
        var most: [UInt8] = [0x00, 0x01]
        for _ in 0..<MQTTLimits.maxFiltersPerPacket { most += field("f") + [0x01] }
        let accepted = decodeAll([0x82, UInt8(most.count & 0x7F) | 0x80, UInt8(most.count >> 7)] + most)
        guard case .subscribe(_, let subscriptions)? = accepted.packets.first else {
            Issue.record("1,000 filters refused: \(String(describing: accepted.failure))")
            return
        }
        #expect(subscriptions.count == MQTTLimits.maxFiltersPerPacket)
    }

    @Test func validUTF8AndWildcardsWhereAllowedPass() {
        let filters = ["#", "+", "+/+", "a/#", "/+/#", "sport/tennis/+", "$SYS/#", "a//b", "/", "ü/€/𝄞"]
        for filter in filters {
            let outcome = decodeAll(Self.subscribe(filter))
            #expect(outcome.failure == nil, "\(filter): \(String(describing: outcome.failure))")
        }
        let topic: [UInt8] = Array("temp/°C/\u{1}".utf8)
        #expect(decodeAll(Self.publish(topic: topic)).failure == nil)
    }
}
