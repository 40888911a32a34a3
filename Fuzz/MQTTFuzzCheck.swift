// 8. As MQTT 3.1.1 bytes (FanoutMQTT): the decoder must give the same packets and the same refusal however
//    the input is split, hold no more than its maximum packet, and make progress on every call; each packet
//    it accepts encodes back to bytes that decode to the same packet; topics and filters it accepts map to
//    valid fanout subjects and patterns, and a topic's subject maps back to the very topic. The input as a
//    fanout subject either has no topic or has one that maps back to it.

private let mqttMaxPacket = 512

private func mqttOutcome(_ bytes: UnsafeRawBufferPointer, chunk: Int) -> [String] {
    var decoder = MQTTDecoder(maxPacketSize: mqttMaxPacket)
    var out: [String] = []
    var start = 0
    while start < bytes.count {
        let end = min(start + chunk, bytes.count)
        var offset = start
        while true {
            let (step, consumed) = decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
            precondition(consumed <= end - offset, "consumed more than it was given")
            precondition(decoder.bufferedCount <= mqttMaxPacket, "the decoder holds more than a packet")
            offset += consumed
            switch step {
            case .packet(let packet):
                checkMQTTPacket(packet)
                out.append("\(packet)")
                continue
            case .needMore(let count):
                precondition(offset == end && count > 0, "needMore before the input was used up")
            case .failure(let error):
                precondition(error.rule.hasPrefix("MQTT-"), "a refusal that names no rule")
                out.append("failure \(error.kind) \(error.rule)")
                return out
            }
            break
        }
        start = end
    }
    return out
}

private func checkMQTTPacket(_ packet: MQTTPacket) {
    var bytes: [UInt8] = []
    MQTTEncoder.encode(packet, into: &bytes)
    var decoder = MQTTDecoder(maxPacketSize: mqttMaxPacket)
    let again = bytes.withUnsafeBytes { decoder.decode($0) }
    precondition(again.step == .packet(packet) && again.consumed == bytes.count, "encode and decode disagree")
    switch packet {
    case .publish(let publish):
        checkMQTTTopic(publish.topic)
    case .subscribe(_, let subscriptions):
        for subscription in subscriptions { checkMQTTFilter(subscription.filter) }
    case .unsubscribe(_, let filters):
        for filter in filters { checkMQTTFilter(filter) }
    default:
        break
    }
}

private func checkMQTTTopic(_ topic: String) {
    guard let subject = try? MQTTTopicMapping.subject(forTopic: topic) else { return }
    precondition(Subject.isValidPattern(subject) && !Subject.isWildcard(subject), "a topic's subject is not concrete")
    precondition(MQTTTopicMapping.topic(forSubject: subject) == topic, "a topic does not map back")
}

private func checkMQTTFilter(_ filter: String) {
    guard let mapped = try? MQTTTopicMapping.patterns(forFilter: filter) else { return }
    precondition(Subject.isValidPattern(mapped.pattern), "a filter mapped to an invalid pattern")
    if let parent = mapped.parent { precondition(Subject.isValidPattern(parent), "an invalid parent pattern") }
}

func checkMQTT(_ bytes: UnsafeRawBufferPointer) {
    let whole = mqttOutcome(bytes, chunk: max(bytes.count, 1))
    let split = mqttOutcome(bytes, chunk: 1 + bytes.count % 5)
    precondition(whole == split, "MQTT decoding depends on how the input was split")
    let text = String(decoding: bytes, as: UTF8.self)
    if let topic = MQTTTopicMapping.topic(forSubject: text) {
        precondition((try? MQTTTopicMapping.subject(forTopic: topic)) == text, "a subject's topic does not map back")
    }
    if MQTTText.isValid(text), (try? MQTTTopicRules.validateName(text)) != nil { checkMQTTTopic(text) }
    if MQTTText.isValid(text), (try? MQTTTopicRules.validateFilter(text)) != nil { checkMQTTFilter(text) }
}
