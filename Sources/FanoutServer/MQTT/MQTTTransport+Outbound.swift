import FanoutEventLoop
import FanoutMQTT
import FanoutProtocol

/// PUBLISH packets to the client: a publish run's messages framed once for all its MQTT receivers of QoS 0,
/// and for QoS 1 and 2 with each receiver's own packet identifier, kept until acknowledged (`MQTTInflight`).
extension MQTTTransport {
    /// Sends one message (a retained one, one kept while the client was away, one pushed outside a run).
    func deliver(_ message: MQTTMessage, retain: Bool, to connection: ClientConnection) {
        guard let socket = connection.socket else { return }
        scratch.removeAll(keepingCapacity: scratch.capacity <= 4096)
        if message.qos == .atMostOnce {
            MQTTEncoder.appendPublishHeader(topic: message.topic, qos: .atMostOnce, retain: retain,
                                            payloadCount: message.payload.count, into: &scratch)
        } else {
            guard let id = takeID(of: connection) else { return }
            MQTTEncoder.appendPublishHeader(topic: message.topic, qos: message.qos, retain: retain, packetID: id,
                                            payloadCount: message.payload.count, into: &scratch)
            inflight.add(MQTTUnacknowledged(packetID: id, message: message))
        }
        scratch += message.payload
        socket.write(scratch)
        connection.server.mqttStats.packetsOut[Int(MQTTPacketType.publish.rawValue)] &+= 1
        checkBacklog(of: connection)
    }

    /// What a message sent outside a run (a retained one, one kept while the client was away) adds to the
    /// connection's backlog meets the marks a run's does: the memory bound's watch and max_pending_bytes, past
    /// which the connection is dropped as a slow consumer, so that retained messages or a returning session's
    /// queue never grow the server past max_memory for a client that does not read.
    private func checkBacklog(of connection: ClientConnection) {
        let server = connection.server
        server.fanout.checkBacklog(of: connection, marks: BacklogMarks(server.configuration.limits))
    }

    /// An unacknowledged message of a returning session, sent again with DUP (MQTT-4.4.0-1, MQTT-3.3.1-1).
    func resend(_ entry: MQTTUnacknowledged, to connection: ClientConnection) {
        guard let socket = connection.socket else { return }
        inflight.add(entry)
        scratch.removeAll(keepingCapacity: scratch.capacity <= 4096)
        MQTTEncoder.appendPublishHeader(topic: entry.message.topic, qos: entry.message.qos, dup: true,
                                        packetID: entry.packetID, payloadCount: entry.message.payload.count,
                                        into: &scratch)
        scratch += entry.message.payload
        socket.write(scratch)
        connection.server.mqttStats.packetsOut[Int(MQTTPacketType.publish.rawValue)] &+= 1
        checkBacklog(of: connection)
    }

    /// A free packet identifier; with all 65,535 waiting for acknowledgements the client is a slow consumer.
    private func takeID(of connection: ClientConnection) -> UInt16? {
        if let id = inflight.takeID() { return id }
        end(connection, .slowConsumer("65535 QoS 1 and 2 messages unacknowledged"))
        return nil
    }

    /// A publish run's messages, framed once per run (`RunFraming`): its topic, its payloads (shared by every
    /// QoS 1 and 2 receiver's unacknowledged copy, never copied per receiver) and its QoS 0 packets (the same
    /// bytes for every QoS 0 receiver, shared by reference when large). Per receiver: its QoS, then one write
    /// (QoS 0) or a header and payload write per message (QoS 1 and 2).
    func writeRunPackets(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection, socket: BufferedSocket,
                         framing: inout RunFraming) {
        if !framing.mqttEncoded { Self.encode(lines, into: &framing) }
        let server = connection.server
        guard let topic = framing.mqttTopic else {
            server.mqttStats.unmappable &+= UInt64(framing.mqttUnmappable)
            return
        }
        guard let granted = filters.grantedQoS(for: framing.subject) else { return }
        let qos = min(granted, framing.mqttQoS)
        server.mqttStats.packetsOut[Int(MQTTPacketType.publish.rawValue)] &+= UInt64(framing.mqttPayloads.count)
        guard qos != .atMostOnce else {
            return RunFraming.write(framing.mqttPackets, receivers: framing.receivers, sharedAs: &framing.sharedMQTT,
                                    to: socket)
        }
        for payload in framing.mqttPayloads {
            guard let id = takeID(of: connection) else { return }
            scratch.removeAll(keepingCapacity: scratch.capacity <= 4096)
            MQTTEncoder.appendPublishHeader(topic: topic, qos: qos, packetID: id, payloadCount: payload.count,
                                            into: &scratch)
            socket.write(scratch)
            socket.write(payload)
            inflight.add(MQTTUnacknowledged(packetID: id, message: MQTTMessage(topic: topic, payload: payload, qos: qos)))
        }
    }

    /// The run's lines (`MSG` and `BMSG` of one subject, perhaps a `RESET`) as MQTT sees them: once per run.
    private static func encode(_ lines: UnsafeRawBufferPointer, into framing: inout RunFraming) {
        framing.mqttEncoded = true
        framing.mqttPayloads.removeAll(keepingCapacity: true)
        framing.mqttPackets.removeAll(keepingCapacity: true)
        framing.mqttTopic = MQTTTopicMapping.topic(forSubject: framing.subject)
        framing.mqttUnmappable = 0
        guard let topic = framing.mqttTopic else {
            // Counted per receiver that does not get them (`mqtt_unmappable`): the run's messages, not its resets.
            ServerOutput.forEachUnit(in: lines) { unit in
                if case .line(let line) = unit, MessageLine(line) == nil { return }
                framing.mqttUnmappable += 1
            }
            return
        }
        ServerOutput.forEachUnit(in: lines) { unit in
            let payload: UnsafeRawBufferPointer
            switch unit {
            case .line(let line):
                guard let message = MessageLine(line) else { return }
                payload = message.payload
            case .binary(_, let bytes, _):
                payload = bytes
            }
            let copy = Array(payload)
            framing.mqttPayloads.append(copy)
            MQTTEncoder.appendPublishHeader(topic: topic, qos: .atMostOnce, payloadCount: copy.count,
                                            into: &framing.mqttPackets)
            framing.mqttPackets += copy
        }
    }
}
