import FanoutMQTT
import FanoutProtocol

/// What the client sends once connected: PUBLISH (a `PUB` or `BPUB`), its QoS 2 release, the acknowledgements
/// of what it was sent, SUBSCRIBE and UNSUBSCRIBE (a `SUB` or `QSUB` per filter, an `UNSUB`).
extension MQTTTransport {
    /// Runs one protocol line (no line end) as the connection's command, owing its reply to `owed`. A `BPUB`
    /// line's bytes follow in `payload`.
    func execute(_ command: [UInt8], payload: [UInt8]? = nil, owing: Owed, of connection: ClientConnection) {
        owed.append(owing)
        let server = connection.server
        let next = command.withUnsafeBytes { server.execute($0, from: connection) }
        guard case .readPayload = next, let payload else { return }
        payload.withUnsafeBytes { server.publishBinary($0, from: connection) }
    }

    /// PUBLISH: published as a `PUB` when a line carries its payload, else as a `BPUB`; acknowledged by its QoS
    /// once published (`published`). A QoS 2 PUBLISH whose identifier awaits PUBREL was published already: it
    /// is only acknowledged again (section 4.3.3).
    func receive(_ publish: MQTTPublish, of connection: ClientConnection) {
        if publish.qos == .exactlyOnce, let id = publish.packetID, awaitingRelease.contains(id) {
            return send(.pubrec(packetID: id), to: connection)
        }
        let subject: String
        do {
            subject = try MQTTTopicMapping.subject(forTopic: publish.topic)
        } catch {
            return end(connection, .mqttProtocol("PUBLISH refused: \(error)"))
        }
        // A publish run carries one QoS (`PublishRun.mqttQoS`): a PUBLISH of another QoS starts its own.
        if publish.qos != lastPublishQoS {
            connection.server.fanout.close()
            lastPublishQoS = publish.qos
        }
        let retained = publish.retain ? (subject: subject, payload: publish.payload) : nil
        let owing = Owed.publish(qos: publish.qos, packetID: publish.packetID, retained: retained)
        line.removeAll(keepingCapacity: true)
        if Self.lineCarries(publish.payload, maxLine: connection.server.configuration.limits.maxLine - subject.utf8.count - 5) {
            line += Array("PUB \(subject) ".utf8)
            line += publish.payload
            execute(line, owing: owing, of: connection)
        } else {
            line += Array("BPUB \(subject) \(publish.payload.count)".utf8)
            execute(line, payload: publish.payload, owing: owing, of: connection)
        }
    }

    /// Whether a `PUB` line carries `payload` as it is: no line end, no NUL, and within max_line.
    static func lineCarries(_ payload: [UInt8], maxLine: Int) -> Bool {
        payload.count <= maxLine && !payload.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 }
    }

    /// A PUBLISH's `PUB` was answered: its acknowledgement by QoS (PUBACK, or PUBREC then PUBREL's PUBCOMP), and
    /// a retained one kept. A refused PUBLISH closes the connection: MQTT 3.1.1 has no negative acknowledgement,
    /// and MQTT-3.3.5-2 leaves closing or acknowledging without publishing; closing never half-works.
    func published(_ reply: UnsafeRawBufferPointer, qos: MQTTQoS, packetID: UInt16?,
                   retained: (subject: String, payload: [UInt8])?, of connection: ClientConnection) {
        guard reply.first == UInt8(ascii: "+") else {
            return end(connection, .mqttProtocol("PUBLISH refused: \(String(decoding: reply, as: UTF8.self))"))
        }
        if let retained {
            connection.server.mqttRetained.retain(subject: retained.subject, payload: retained.payload, qos: qos)
        }
        guard let packetID else { return }
        if qos == .atLeastOnce {
            send(.puback(packetID: packetID), to: connection)
        } else {
            awaitingRelease.insert(packetID)
            send(.pubrec(packetID: packetID), to: connection)
        }
    }

    /// PUBREL: the QoS 2 message is the client's no more; PUBCOMP is sent even for an identifier not held
    /// (a PUBREL sent again after the server's PUBCOMP was lost, MQTT-4.3.3-2).
    func released(_ id: UInt16, of connection: ClientConnection) {
        awaitingRelease.remove(id)
        send(.pubcomp(packetID: id), to: connection)
    }

    /// PUBACK or PUBCOMP: the message is delivered. An unknown identifier is ignored.
    func acknowledged(_ id: UInt16, of connection: ClientConnection) {
        inflight.remove(id)
    }

    /// PUBREC: PUBREL goes back, and only PUBCOMP is awaited.
    func received(_ id: UInt16, of connection: ClientConnection) {
        guard inflight.release(id) else { return }
        send(.pubrel(packetID: id), to: connection)
    }

    /// SUBSCRIBE: a `SUB` (or `QSUB` for `$share/<group>/...`) per filter whose mapping holds, its reply the
    /// filter's SUBACK code; the SUBACK goes once all are answered, then the retained messages they match.
    func subscribe(_ subscriptions: [MQTTSubscription], packetID: UInt16, of connection: ClientConnection) {
        var codes: [MQTTSubackReturnCode] = []
        var asked: [MQTTFilter?] = []
        for subscription in subscriptions {
            if var patterns = try? MQTTTopicMapping.patterns(forFilter: subscription.filter) {
                // `a/#` also matches `a` (its parent): a user who may subscribe to `a.>` but not to `a` gets the
                // filter for what it may see, rather than a refusal of all of it.
                if let parent = patterns.parent, connection.permissions?.maySubscribe(parent) == false {
                    patterns.parent = nil
                }
                asked.append(MQTTFilter(filter: subscription.filter, qos: subscription.qos, patterns: patterns))
                codes.append(.failure)
            } else {
                asked.append(nil)
                codes.append(.failure)
            }
        }
        let job = SubscribeJob(packetID: packetID, codes: codes, filters: asked)
        for (slot, filter) in asked.enumerated() {
            guard let filter else { continue }
            execute(subscribeLine(filter.patternList, group: filter.patterns.group), owing: .subscribe(job, slot: slot),
                    of: connection)
        }
        // Behind the filters' replies: the SUBACK.
        execute(Array("PING".utf8), owing: .sequence(.suback(job)), of: connection)
    }

    /// A filter's `SUB` was answered: granted at the QoS asked, or refused (0x80).
    func subscribed(_ reply: UnsafeRawBufferPointer, job: SubscribeJob, slot: Int) {
        guard reply.first == UInt8(ascii: "+"), let filter = job.filters[slot] else { return }
        job.codes[slot] = .granted(filter.qos)
        filters.add(filter)
    }

    /// Every filter of the SUBSCRIBE is answered: SUBACK, then the retained messages of the granted filters
    /// (MQTT-3.3.1-6), with the retain flag, at the lower of their QoS and the filter's: an exact filter's at
    /// once, wildcard filters' by a walk of the retained messages a slice per loop pass (`MQTTRetainedWalk`).
    func finishSubscribe(_ job: SubscribeJob, of connection: ClientConnection) {
        send(.suback(packetID: job.packetID, returnCodes: job.codes), to: connection)
        let retained = connection.server.mqttRetained
        guard retained.count > 0 else { return }
        var wildcards: [MQTTFilter] = []
        for (slot, filter) in job.filters.enumerated() {
            guard let filter, case .granted = job.codes[slot] else { continue }
            let exact = retained.forEachExact(filter.patterns) { subject, payload, qos in
                guard let topic = MQTTTopicMapping.topic(forSubject: subject) else { return }
                deliver(MQTTMessage(topic: topic, payload: payload, qos: min(qos, filter.qos)), retain: true,
                        to: connection)
            }
            if !exact { wildcards.append(filter) }
        }
        guard !wildcards.isEmpty else { return }
        walk = MQTTRetainedWalk(subjects: retained.subjects, filters: wildcards)
        walkRetained(of: connection)
    }

    /// A slice of the walk; the connection's later packets wait until it is done.
    func walkRetained(of connection: ClientConnection) {
        guard let walk, connection.socket != nil else { return }
        let server = connection.server
        let done = walk.step(server.mqttRetained) { deliver($0, retain: true, to: connection) }
        if done {
            self.walk = nil
            if walkHoldsCommands {
                walkHoldsCommands = false
                server.releaseCommands(of: connection)
            }
            return
        }
        if !walkHoldsCommands { walkHoldsCommands = server.holdCommands(of: connection) }
        walk.continueLater(on: server.loop) { [weak self, weak connection] in
            guard let self, let connection else { return }
            self.walkRetained(of: connection)
        }
    }

    /// UNSUBSCRIBE: the patterns no other filter holds are dropped (`UNSUB`); UNSUBACK follows their replies.
    /// A filter not held is acknowledged all the same (MQTT-3.10.4-5).
    func unsubscribe(_ texts: [String], packetID: UInt16, of connection: ClientConnection) {
        var dropped: [String] = []
        for text in texts { dropped += filters.remove(text) }
        if !dropped.isEmpty {
            var line = Array("UNSUB".utf8)
            for pattern in dropped {
                line.append(UInt8(ascii: " "))
                line += Array(pattern.utf8)
            }
            execute(line, owing: .ignore, of: connection)
        }
        execute(Array("PING".utf8), owing: .sequence(.unsuback(packetID)), of: connection)
    }
}
