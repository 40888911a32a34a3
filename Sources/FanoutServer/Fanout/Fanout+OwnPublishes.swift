import FanoutEngine
import FanoutMQTT

/// The server's own publishes (presence's joins and leaves, MQTT's wills) go through the engine's publish path
/// as a client's PUB does: numbered, kept by the history rules that name them, fanned out on every transport
/// (and, on several nodes, through the engine). They have no publisher, so no `+OK` is written; the caller
/// ends the current run first (`finish`), and the slice as a read ends (`readEnded`) after.
extension Fanout {
    /// Publishes one message of the server's own and, when the engine numbers it at once, fans it out.
    /// `qos` is what MQTT receivers take it at (a will's QoS); every other own message counts as QoS 2, as a
    /// fanout client's does. On several nodes the engine delivers it later, at QoS 2.
    func publishOwn(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                    qos: MQTTQoS = .exactlyOnce,
                    receipt: @autoclosure () -> (receipts: any PublishReceipts, ticket: UInt64)) -> PublishOutcome {
        // Messages of one subject at another QoS may not share a run: the run carries one QoS.
        if run.isOpen && run.mqttQoS != qos { close() }
        ownQoS = qos
        defer { ownQoS = .exactlyOnce }
        let outcome = host.engine.publish(subject: subject, payload: payload, anyBytes: anyBytes, receipt: receipt())
        if case .numbered(let seq, let engineRun, let recorded) = outcome {
            _ = deliver(NumberedMessage(subject: subject, seq: seq, payload: payload, anyBytes: anyBytes,
                                        run: engineRun, recorded: recorded))
        }
        return outcome
    }
}
