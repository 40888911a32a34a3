import FanoutMQTT

/// One subscription of an MQTT client, as it asked for it and as fanout holds it.
struct MQTTFilter: Equatable {
    /// The filter as the client wrote it (`$share/<group>/<filter>` included): UNSUBSCRIBE names it so.
    let filter: String
    /// The QoS granted: at most the one asked for.
    let qos: MQTTQoS
    /// The fanout patterns it stands for (`a/#`: `a.>` and `a`) and its group, from `MQTTTopicMapping`.
    let patterns: MQTTFilterPatterns

    /// The patterns as a SUB or QSUB names them.
    var patternList: [String] { patterns.parent.map { [patterns.pattern, $0] } ?? [patterns.pattern] }
}

/// A message on its way to an MQTT client, in the form it is kept when it cannot be sent yet or until it is
/// acknowledged: its topic, its bytes and the QoS it goes at.
struct MQTTMessage {
    let topic: String
    let payload: [UInt8]
    let qos: MQTTQoS
    /// Bytes it holds, for the bounds (`heldBytes`, max_memory).
    var weight: Int { topic.utf8.count + payload.count + 48 }
}

/// Where a returning client's catching up from history starts: the subject's epoch and the seq before the first
/// message it missed.
struct MQTTResumePoint: Equatable {
    let epoch: String
    let after: UInt64
}

/// A QoS 1 or 2 message sent to the client and not yet acknowledged (PUBACK, or PUBREC then PUBCOMP).
struct MQTTUnacknowledged {
    let packetID: UInt16
    let message: MQTTMessage
    /// QoS 2: PUBREC came and PUBREL was sent; only PUBCOMP is awaited, and a reconnect resends PUBREL.
    var released = false
}

/// What an MQTT session holds between connections of its client (clean session 0), and what a connection of it
/// holds while connected: handed from the connection to `MQTTSessions` when it goes, and back when the client
/// returns (MQTT-3.1.2-4, section 4.1).
struct MQTTSessionState {
    /// The subscriptions, in the order they were made; one per filter text.
    var filters: [MQTTFilter] = []
    /// QoS 1 and 2 messages sent and not acknowledged, in the order sent: resent with DUP on return
    /// (MQTT-4.4.0-1).
    var unacknowledged: [MQTTUnacknowledged] = []
    /// QoS 1 and 2 messages that arrived while the client was away, oldest first; bounded by
    /// `mqtt_session_max_messages`.
    var queued: [MQTTMessage] = []
    /// Packet identifiers of QoS 2 PUBLISHes from the client that were PUBREC'd and await PUBREL: a
    /// redelivery of one of them is not published again (exactly once, section 4.3.3).
    var awaitingRelease: Set<UInt16> = []
    /// The next packet identifier to try for a message to the client.
    var nextPacketID: UInt16 = 1
    /// Subjects of exact filters whose messages history kept while the client was away: on return the client
    /// catches up from history (`RESUME <subject> <epoch> <after>`) instead of the session's own queue, so what
    /// history keeps bounds what it gets back, not `mqtt_session_max_messages`.
    var resumeFrom: [String: MQTTResumePoint] = [:]

    /// Bytes held for the client: what `mqtt_session_max_messages` and max_memory weigh.
    var heldBytes: Int {
        unacknowledged.reduce(0) { $0 + $1.message.weight } + queued.reduce(0) { $0 + $1.weight }
    }
}
