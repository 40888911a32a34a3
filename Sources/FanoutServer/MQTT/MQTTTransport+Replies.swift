import FanoutEventLoop
import FanoutMQTT
import FanoutProtocol

/// What the dispatcher writes to an MQTT connection: replies to the lines its packets became, matched in order
/// with what each means (`owed`), and pushes (`MSG`, `BMSG`) sent on as PUBLISH packets. Nothing of the line
/// protocol reaches the client as text.
extension MQTTTransport {
    func writeOutput(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection) {
        ServerOutput.forEachUnit(in: lines) { unit in
            switch unit {
            case .line(let line):
                if let message = MessageLine(line) {
                    push(subject: message.subject, payload: message.payload, to: connection)
                } else if Self.isPush(line) {
                    return
                } else {
                    reply(line, to: connection)
                }
            case .binary(let header, let payload, _):
                guard let message = BinaryMessageHeader(header) else { return }
                push(subject: message.subject, payload: payload, to: connection)
            }
        }
    }

    /// Lines the server sends unasked that MQTT has nothing for: a subject's `RESET`, and the `-ERR` that says a
    /// token expired (the connection closes after token_expiry_grace unless CONNECT ... an MQTT client cannot
    /// send AUTH again, so it reconnects with a fresh token).
    static func isPush(_ line: UnsafeRawBufferPointer) -> Bool {
        line.starts(with: "RESET ".utf8) || line.starts(with: "-ERR auth-expired".utf8)
    }

    /// A reply: what it answers decides what the client is sent.
    private func reply(_ line: UnsafeRawBufferPointer, to connection: ClientConnection) {
        guard let first = owed.popFirst() else { return }
        // An idle connection keeps no storage for replies it no longer waits for.
        if owed.isEmpty { owed = [] }
        switch first {
        case .greeting, .ignore:
            break
        case .auth:
            authenticated(line, of: connection)
        case .publish(let qos, let packetID, let retained):
            published(line, qos: qos, packetID: packetID, retained: retained, of: connection)
        case .subscribe(let job, let slot):
            subscribed(line, job: job, slot: slot)
        case .sequence(.suback(let job)):
            finishSubscribe(job, of: connection)
        case .sequence(.unsuback(let id)):
            send(.unsuback(packetID: id), to: connection)
        }
    }

    /// A message pushed outside a publish run (a group's share, a replay, a message behind held output): at the
    /// lower of the connection's granted QoS and the publisher's, while the run that sends it is open.
    private func push(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, to connection: ClientConnection) {
        let subjectText = String(decoding: subject, as: UTF8.self)
        guard let granted = filters.grantedQoS(for: subjectText) else { return }
        guard let topic = MQTTTopicMapping.topic(forSubject: subjectText) else {
            connection.server.mqttStats.unmappable &+= 1
            return
        }
        let fanout = connection.server.fanout
        let publisherQoS = fanout.run.isOpen ? fanout.run.mqttQoS : .exactlyOnce
        deliver(MQTTMessage(topic: topic, payload: Array(payload), qos: min(granted, publisherQoS)), retain: false,
                to: connection)
    }
}
