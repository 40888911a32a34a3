import DequeModule
import FanoutEngine
import FanoutMQTT
import FanoutProtocol
import FanoutSubjects

/// The session of a client that is away (clean session 0): its state as its connection left it, and the QoS 1
/// and 2 messages that arrived since, oldest first, at most `mqtt_session_max_messages`.
final class ParkedSession: Subscriber {
    let clientID: String
    /// Filters, unacknowledged messages and packet identifiers, as the connection handed them over.
    var state: MQTTSessionState
    /// What the client's user may see when it left: a parked session receives no more than its connection did.
    let grant: SharedPermissions?
    /// When its client went: `mqtt_session_expiry` counts from here.
    let since: ContinuousClock.Instant
    /// Messages that arrived while away, oldest first. Bound: `mqtt_session_max_messages`.
    var queued = Deque<MQTTMessage>()
    /// Subjects it catches up from history on return (`MQTTSessionState.resumeFrom`). Bound: one per exact
    /// filter.
    var resumeFrom: [String: MQTTResumePoint] = [:]
    /// Bytes counted toward max_memory for it (`MemoryGuard.reserveHeld`), given back when it goes.
    var countedBytes = 0
    /// False once it returned to a connection or was dropped.
    var isParked = true
    var deliveryMark: UInt64 = 0

    init(clientID: String, state: MQTTSessionState, grant: SharedPermissions?, since: ContinuousClock.Instant) {
        self.clientID = clientID
        self.state = state
        self.grant = grant
        self.since = since
    }

    /// The QoS a message of `subject` is kept at for this session before the publisher's own is applied: the
    /// highest of the plain filters that match it and admit it (the `$` rule, MQTT-4.7.2-1); nil when none
    /// does. O(filters × their patterns).
    func grantedQoS(for subject: String) -> MQTTQoS? {
        var best: MQTTQoS?
        for filter in state.filters where filter.patterns.group == nil && filter.patterns.admits(subject: subject) {
            guard best.map({ filter.qos > $0 }) ?? true else { continue }
            if filter.patternList.contains(where: { Subject.matches(pattern: $0, subject: subject) }) {
                best = filter.qos
            }
        }
        return best
    }

    /// Whether a plain filter of the session names `subject` exactly: its messages kept in history are caught
    /// up from there on return. O(filters).
    func resumes(_ subject: String) -> Bool {
        state.filters.contains { $0.patterns.group == nil && $0.patterns.pattern == subject }
    }
}

/// A parked session a publish run's messages are kept for, and the QoS its filters grant the run's subject.
struct ParkedDelivery {
    let session: ParkedSession
    let granted: MQTTQoS
}

/// Parked sessions receive what their filters match while their clients are away: the fan-out gathers them
/// with a run's receivers and hands them each message.
extension MQTTSessions {
    /// Appends the parked sessions that keep messages of `subject` to `deliveries`, once per publish run: those
    /// whose filters match it, admit it (the `$` rule) and grant QoS 1 or 2, and whose user may see it.
    /// Returns the subject's MQTT topic, nil when it has none. Cost: one index lookup, then
    /// O(matching sessions × their filters).
    func gather(_ subject: String, into deliveries: inout [ParkedDelivery]) -> String? {
        index.forEachReceiver(of: subject) { session in
            guard session.isParked, session.grant?.permissions.withholds(subject) != true,
                  let granted = session.grantedQoS(for: subject), granted != .atMostOnce else { return }
            deliveries.append(ParkedDelivery(session: session, granted: granted))
        }
        return deliveries.isEmpty ? nil : MQTTTopicMapping.topic(forSubject: subject)
    }

    /// Keeps one message for each gathered session at the lower of its granted QoS and the publisher's `qos`;
    /// QoS 0 is not kept for a client that is away (`docs/mqtt.md`). A session past `mqtt_session_max_messages`
    /// drops its oldest, and a message that would pass max_memory is dropped; both are counted. A subject
    /// without a topic is counted unmappable once per session. Cost: O(deliveries) per message, the payload
    /// copied once and shared.
    ///
    /// A message history keeps, of a subject a session's filter names exactly, is not queued: the session notes
    /// where its catching up from history starts (`resumeFrom`), and the client gets it and what follows from
    /// history when it returns, as `RESUME` gives them.
    func queue(_ numbered: NumberedMessage, epoch: String, topic: String?, qos: MQTTQoS,
               to deliveries: [ParkedDelivery]) {
        guard qos != .atMostOnce else { return }
        guard let topic else {
            host.mqttStats.unmappable &+= UInt64(deliveries.count)
            return
        }
        var deliveries = deliveries
        if numbered.recorded { deliveries = resumeFromHistory(numbered, epoch: epoch, deliveries) }
        guard !deliveries.isEmpty else { return }
        let bytes = Array(numbered.payload)
        let limit = host.configuration.mqtt.sessionMaxMessages
        let memory = host.memory!
        for delivery in deliveries where delivery.session.isParked {
            let session = delivery.session
            let message = MQTTMessage(topic: topic, payload: bytes, qos: min(delivery.granted, qos))
            guard limit > 0, memory.reserveHeld(message.weight) else {
                host.mqttStats.sessionMessagesDropped &+= 1
                continue
            }
            session.queued.append(message)
            session.countedBytes += message.weight
            trim(session, to: limit)
        }
    }

    /// Notes where the sessions that name `numbered`'s subject exactly catch up from history, and returns the
    /// others, which queue it.
    private func resumeFromHistory(_ numbered: NumberedMessage, epoch: String,
                                   _ deliveries: [ParkedDelivery]) -> [ParkedDelivery] {
        let subject = String(decoding: numbered.subject, as: UTF8.self)
        var rest: [ParkedDelivery] = []
        for delivery in deliveries {
            let session = delivery.session
            guard session.isParked, session.resumes(subject) else {
                rest.append(delivery)
                continue
            }
            if session.resumeFrom[subject] == nil {
                let subjectEpoch = epoch.isEmpty ? host.localHistory.epoch(ofSubject: subject) : epoch
                session.resumeFrom[subject] = MQTTResumePoint(epoch: subjectEpoch, after: numbered.seq &- 1)
            }
        }
        return rest
    }

    /// Drops `session`'s oldest queued messages past `limit`, counted. O(dropped).
    func trim(_ session: ParkedSession, to limit: Int) {
        while session.queued.count > limit {
            let oldest = session.queued.removeFirst()
            host.memory.releaseHeld(oldest.weight)
            session.countedBytes -= oldest.weight
            host.mqttStats.sessionMessagesDropped &+= 1
        }
    }
}
