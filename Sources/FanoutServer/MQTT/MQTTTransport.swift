import DequeModule
import FanoutEventLoop
import FanoutMQTT
import FanoutProtocol

/// The MQTT 3.1.1 transport (`docs/mqtt.md`): packets in, each turned into the protocol lines that do its work
/// (CONNECT an `AUTH`, SUBSCRIBE a `SUB` or `QSUB` per filter, PUBLISH a `PUB` or `BPUB`) run by the same
/// dispatcher as every other transport's, their replies turned into MQTT's acknowledgements
/// (`MQTTTransport+Replies.swift`); `MSG` and `BMSG` pushes out as PUBLISH packets
/// (`MQTTTransport+Outbound.swift`). So limits, permissions, presence, slow consumers and the rest are the
/// line protocol's.
final class MQTTTransport: TransportAdapter {
    enum Phase {
        /// Nothing but CONNECT is accepted (MQTT-3.1.0-1).
        case awaitingConnect
        /// CONNECT came; its AUTH's reply is awaited.
        case authenticating
        /// CONNACK 0 was sent.
        case connected
    }

    /// What a reply line the dispatcher owes means, in command order (every command gets one reply).
    enum Owed {
        /// The protocol's greeting, written when the connection was admitted.
        case greeting
        /// CONNECT's `AUTH`.
        case auth
        /// A PUBLISH's `PUB` or `BPUB`: acknowledged by its QoS once published; retained when it asks.
        case publish(qos: MQTTQoS, packetID: UInt16?, retained: (subject: String, payload: [UInt8])?)
        /// One filter's `SUB` or `QSUB` of a SUBSCRIBE.
        case subscribe(SubscribeJob, slot: Int)
        /// A `PING` that orders an acknowledgement behind the replies before it (SUBACK, UNSUBACK).
        case sequence(SequencedAck)
        /// A reply nobody waits for (a returning session's `SUB`s, an UNSUBSCRIBE's `UNSUB`).
        case ignore
    }

    enum SequencedAck {
        case suback(SubscribeJob)
        case unsuback(UInt16)
    }

    /// A SUBSCRIBE whose filters' replies are being gathered into its SUBACK.
    final class SubscribeJob {
        let packetID: UInt16
        var codes: [MQTTSubackReturnCode]
        /// The filters asked for, nil where the mapping refused one (its code is 0x80 already).
        let filters: [MQTTFilter?]

        init(packetID: UInt16, codes: [MQTTSubackReturnCode], filters: [MQTTFilter?]) {
            self.packetID = packetID
            self.codes = codes
            self.filters = filters
        }
    }

    var decoder: MQTTDecoder
    var phase = Phase.awaitingConnect
    var owed: Deque<Owed> = [.greeting]
    /// The CONNECT being answered, until CONNACK: an idle connection keeps none of its strings.
    var connect: MQTTConnect?
    /// CONNECT's keep-alive in seconds (0: none), once it came.
    var keepAliveSeconds: UInt16?
    var clientID = ""
    var cleanSession = true
    /// The will and its subject, published unless the client sends DISCONNECT (MQTT-3.1.2-8).
    var will: (will: MQTTWill, subject: String)?
    var filters = MQTTFilterTable()
    var inflight = MQTTInflight()
    /// QoS 2 PUBLISHes from the client that were PUBREC'd and await PUBREL (exactly once, section 4.3.3).
    var awaitingRelease: Set<UInt16> = []
    /// The QoS of the client's last PUBLISH: its publish run carries it (`publishQoS`).
    var lastPublishQoS = MQTTQoS.atMostOnce
    /// Set while the connection's own input is being read: an end decided then waits for `finishRead`.
    var isReading = false
    /// Why the connection ends, decided while reading: acted on after the read.
    var ending: DisconnectReason?
    /// Ends the connection on the next loop pass when the end is decided outside its read (a reply that an
    /// engine gave later).
    var endTimer: LoopTimer?
    /// The retained messages a SUBSCRIBE's wildcard filters receive, being found a slice per loop pass.
    var walk: MQTTRetainedWalk?
    /// The walk holds the connection's later packets (`Server.holdCommands`), and lets go when done.
    var walkHoldsCommands = false
    /// Reused for packets written one at a time.
    var scratch: [UInt8] = []
    /// Reused for the lines a packet becomes.
    var line: [UInt8] = []

    /// The largest packet accepted: a PUBLISH of max_payload bytes with a topic whose subject fits (255 bytes,
    /// each escaped byte three) and its headers, or a CONNECT with a will of that size and its identifiers.
    static func maxPacketSize(_ limits: Limits) -> Int { limits.maxPayload + 65_536 }

    init(limits: Limits) {
        decoder = MQTTDecoder(maxPacketSize: Self.maxPacketSize(limits))
    }

    override var heldBytes: Int { inflight.bytes }

    override var publishQoS: MQTTQoS? { lastPublishQoS }

    override var idleSetting: String? {
        guard let keepAliveSeconds else { return "auth_timeout" }
        return keepAliveSeconds > 0 ? "keepalive" : nil
    }

    override func write(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection) {
        writeOutput(lines, to: connection)
    }

    override func writeRun(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection, socket: BufferedSocket,
                           framing: inout RunFraming) {
        writeRunPackets(lines, to: connection, socket: socket, framing: &framing)
    }

    // MARK: Input

    /// Decodes the chunk's packets, acting on each in order. The turn and pause rules apply between packets,
    /// as between lines on TCP: when reading stops, the rest of the chunk stays in the socket's input. A packet
    /// split across reads waits in the decoder, counted toward max_memory once it is large. Cost: linear in
    /// the chunk.
    override func consume(_ chunk: UnsafeRawBufferPointer, for connection: ClientConnection, turn: inout ReadTurn) -> Int {
        guard ending == nil, let socket = connection.socket else { return chunk.count }
        guard !turn.isOver else { return 0 }
        isReading = true
        defer {
            isReading = false
            settleHeldBytes(of: connection)
        }
        var consumed = 0
        while true {
            let (step, used) = decoder.decode(UnsafeRawBufferPointer(rebasing: chunk[consumed...]))
            consumed += used
            switch step {
            case .needMore:
                return consumed
            case .failure(let error):
                refuse(error, of: connection)
                return chunk.count
            case .packet(let packet):
                connection.server.mqttStats.packetsIn[Int(packet.type.rawValue)] &+= 1
                handle(packet, of: connection)
                if ending != nil { return chunk.count }
                guard connection.goesOn(after: &turn, countingLine: true, socket: socket) else { return consumed }
            }
        }
    }

    /// A packet split across reads is held by the decoder: past a few kilobytes it counts toward max_memory by
    /// the count a BPUB's payload uses on TCP, so that the bound's drops weigh it. O(1).
    private func settleHeldBytes(of connection: ClientConnection) {
        let held = decoder.bufferedCount
        let memory = connection.server.memory!
        if held >= ClientConnection.countedLineBytes || memory.holdsPayload(of: connection) {
            memory.noteReceived(held >= ClientConnection.countedLineBytes ? held : 0, by: connection)
        }
    }

    /// The decoder refused the stream: CONNACK's refusal codes where the standard has one for it, then the
    /// connection closes (section 4.8).
    private func refuse(_ error: MQTTDecodeError, of connection: ClientConnection) {
        if phase == .awaitingConnect {
            switch error.kind {
            case .unacceptableProtocolLevel: sendConnack(.unacceptableProtocolVersion, to: connection)
            case .identifierRejected: sendConnack(.identifierRejected, to: connection)
            case .malformed, .tooLarge: break
            }
        }
        end(connection, .mqttProtocol(error.description))
    }

    /// Acts on one packet.
    private func handle(_ packet: MQTTPacket, of connection: ClientConnection) {
        if case .connect(let connect) = packet {
            guard phase == .awaitingConnect else {
                return end(connection, .mqttProtocol("MQTT-3.1.0-2: a second CONNECT"))
            }
            return accept(connect, of: connection)
        }
        guard phase == .connected else {
            // Before CONNACK nothing but CONNECT (MQTT-3.1.0-1); while its AUTH is answered, nothing at all can
            // have been sent by a client that waits for CONNACK, as the standard's clients do.
            return end(connection, .mqttProtocol("MQTT-3.1.0-1: \(packet.type) before CONNACK"))
        }
        switch packet {
        case .publish(let publish): receive(publish, of: connection)
        case .puback(let id): acknowledged(id, of: connection)
        case .pubrec(let id): received(id, of: connection)
        case .pubrel(let id): released(id, of: connection)
        case .pubcomp(let id): acknowledged(id, of: connection)
        case .subscribe(let id, let subscriptions): subscribe(subscriptions, packetID: id, of: connection)
        case .unsubscribe(let id, let filters): unsubscribe(filters, packetID: id, of: connection)
        case .pingreq: send(.pingresp, to: connection)
        case .disconnect:
            // A clean goodbye: the will is not published (MQTT-3.14.4-3).
            will = nil
            end(connection, .quit)
        case .connect, .connack, .suback, .unsuback, .pingresp:
            end(connection, .mqttProtocol("a client may not send \(packet.type)"))
        }
    }

    // MARK: Ending

    /// Ends the connection: after the read when it is being read, else on the next loop pass (never from inside
    /// a write, which may be a fan-out's).
    func end(_ connection: ClientConnection, _ reason: DisconnectReason) {
        guard ending == nil else { return }
        // Input after this is dropped unread (`consume`).
        ending = reason
        guard !isReading else { return }
        let timer = LoopTimer(loop: connection.server.loop) { [weak connection] in
            guard let connection else { return }
            connection.server.disconnect(connection, reason: reason)
        }
        timer.schedule(after: .zero)
        endTimer = timer
    }

    override func finishRead(of connection: ClientConnection) {
        guard let ending else { return }
        self.ending = nil
        connection.server.disconnect(connection, reason: ending)
    }

    /// MQTT has no goodbye from the server: what is queued (a refusing CONNACK) is flushed, except a slow
    /// consumer's backlog, which is dropped.
    override func farewell(_ reason: DisconnectReason, to connection: ClientConnection) -> Bool {
        // CONNECT's AUTH ended the connection rather than answering it: CONNACK says why.
        if phase == .authenticating {
            switch reason {
            case .userLimit: sendConnack(.serverUnavailable, to: connection)
            case .authFailures: sendConnack(.badUsernameOrPassword, to: connection)
            default: break
            }
        }
        if case .slowConsumer = reason { return false }
        return true
    }

    /// The connection is gone: its session is kept for its client's return (clean session 0) and its will
    /// published unless it said DISCONNECT (MQTT-3.1.2-8, MQTT-3.1.2-10).
    override func connectionClosed(_ connection: ClientConnection, reason: DisconnectReason) {
        endTimer = nil
        guard phase == .connected else { return }
        let server = connection.server
        server.mqttSessions.close(clientID: clientID, connection: connection, keep: !cleanSession,
                                  state: sessionState(), grant: connection.grant)
        // A stopping server publishes no wills: it could not deliver them, and its clients did nothing wrong.
        if let will, reason != .shutdown { server.mqttSessions.publishWill(will.will, subject: will.subject) }
        will = nil
    }

    /// What a returning client finds (clean session 0).
    func sessionState() -> MQTTSessionState {
        MQTTSessionState(filters: filters.all, unacknowledged: inflight.inOrder, queued: [],
                         awaitingRelease: awaitingRelease, nextPacketID: inflight.nextID)
    }

    // MARK: Writing packets

    /// A control packet, encoded in a buffer of its own: `scratch` keeps its capacity for the PUBLISHes of
    /// connections that receive them, and an idle connection keeps none.
    func send(_ packet: MQTTPacket, to connection: ClientConnection) {
        guard let socket = connection.socket else { return }
        var bytes: [UInt8] = []
        MQTTEncoder.encode(packet, into: &bytes)
        socket.write(bytes)
        connection.server.mqttStats.packetsOut[Int(packet.type.rawValue)] &+= 1
    }

    func sendConnack(_ code: MQTTConnectReturnCode, sessionPresent: Bool = false, to connection: ClientConnection) {
        send(.connack(sessionPresent: sessionPresent, returnCode: code), to: connection)
    }
}
