import DequeModule
import FanoutEngine
import FanoutEventLoop
import FanoutMQTT
import FanoutSubjects
import Logging

/// What the MQTT sessions need of the server.
protocol MQTTSessionsHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var loop: EventLoop { get }
    var logger: Logger { get }
    var mqttStats: MQTTStats { get set }
    /// Parked sessions' bytes count toward max_memory as held bytes (`reserveHeld`).
    var memory: MemoryGuard! { get }
    /// Wills go out through the engine's publish path, as presence events do.
    var engine: any Engine { get }
    var fanout: Fanout<Server> { get }
    var mqttRetained: MQTTRetained { get }
    /// A subject's epoch, for catching up from history on return.
    var localHistory: any LocalHistory { get }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
    /// Ends a slice of the server's own publishes as a read ends: the run goes out and the engine records it.
    func readEnded()
}

/// MQTT sessions by client identifier: the connection of each client that is here, and the sessions (clean
/// session 0) of clients that are away, which go on receiving their QoS 1 and 2 messages, bounded
/// (`mqtt_max_sessions`, `mqtt_session_max_messages`, `mqtt_session_expiry`, max_memory), until they return to
/// this node. Also the wills of clients gone without DISCONNECT, published on the next loop pass
/// (`MQTTSessions+Wills.swift`).
///
/// Worst case: `live` holds one entry per MQTT connection (max_connections); `parked` at most
/// `mqtt_max_sessions` sessions, each holding its filters (as many as max_subscriptions allowed its connection),
/// its unacknowledged messages (at most 65,535, the packet identifiers) and at most `mqtt_session_max_messages`
/// queued; `awayOrder` at most twice the parked sessions plus 16 (it is compacted past that). A publish pays
/// nothing here while no session is parked (`hasParked`); otherwise see `gather` and `queue`.
final class MQTTSessions: PublishReceipts {
    unowned let host: any MQTTSessionsHost
    /// The connection of each client identifier that is connected.
    private(set) var live: [String: ClientConnection] = [:]
    /// The sessions of clients that are away, by client identifier. The index holds its members weakly: this
    /// holds them.
    private(set) var parked: [String: ParkedSession] = [:]
    /// Whether any session is parked: the one check a publish run pays (`Fanout.gatherReceivers`).
    private(set) var hasParked = false
    /// The parked sessions' plain patterns (not `$share`: a shared subscription's messages go to the members
    /// present).
    let index = SubjectIndex<ParkedSession>()
    /// Parked sessions in the order they were parked, oldest first: who goes first past `mqtt_max_sessions` or
    /// `mqtt_session_expiry`. Sessions that returned or were dropped stay until they reach the front or a
    /// compaction (`parkedOrder`).
    var awayOrder = Deque<ParkedSession>()
    var expiryTimer: LoopTimer?
    /// Wills waiting for the next loop pass (`MQTTSessions+Wills.swift`).
    var wills = Deque<QueuedWill>()
    var willTimer = SliceTimer()
    /// Wills were dropped past `maxQueuedWills` since the last pass: logged once.
    var willsOverflowed = false

    init(host: any MQTTSessionsHost) {
        self.host = host
    }

    /// A CONNECT of `clientID` was accepted: a connection already holding the identifier is closed first
    /// (`.sessionTakenOver`, MQTT-3.1.4-2), which parks its session when it had one. Returns the session kept
    /// for the identifier when `cleanSession` is false (nil when there is none: CONNACK's session present 0);
    /// with `cleanSession` true any kept session is discarded (MQTT-3.1.2-6).
    func open(clientID: String, cleanSession: Bool, for connection: ClientConnection) -> MQTTSessionState? {
        if let previous = live[clientID], previous !== connection {
            // Its adapter's `connectionClosed` calls `close` from inside this call: that parks its session
            // (clean session 0), taken back just below.
            host.disconnect(previous, reason: .sessionTakenOver)
        }
        live[clientID] = connection
        guard let session = parked[clientID] else { return nil }
        var state = session.state
        state.queued = Array(session.queued)
        state.resumeFrom = session.resumeFrom
        unpark(session)
        return cleanSession ? nil : state
    }

    /// The connection of `clientID` closed. With `keep` (clean session 0) its session is kept for the client's
    /// return, and receives the messages its filters match meanwhile, as `grant` allows.
    func close(clientID: String, connection: ClientConnection, keep: Bool, state: MQTTSessionState,
               grant: SharedPermissions?) {
        if live[clientID] === connection {
            live[clientID] = nil
        } else if live[clientID] != nil {
            // A newer connection holds the identifier already (a takeover whose close came late): the session
            // is that connection's now.
            return
        }
        guard keep else { return }
        park(ParkedSession(clientID: clientID, state: state, grant: grant, since: .now))
    }

    /// Keeps `session` for its client's return: in `parked`, its plain patterns in the index, its bytes counted.
    private func park(_ session: ParkedSession) {
        let settings = host.configuration.mqtt
        guard settings.maxSessions > 0 else {
            host.mqttStats.sessionsDropped &+= 1
            return
        }
        if let older = parked[session.clientID] { unpark(older) }
        while parked.count >= settings.maxSessions, let oldest = oldestParked() { drop(oldest) }
        let stateBytes = session.state.heldBytes
        if host.memory.reserveHeld(stateBytes) {
            session.countedBytes = stateBytes
        } else {
            // Over max_memory: the subscriptions are kept, the messages unacknowledged are not.
            host.mqttStats.sessionMessagesDropped &+= UInt64(session.state.unacknowledged.count)
            session.state.unacknowledged.removeAll()
            session.countedBytes = session.state.heldBytes
            _ = host.memory.reserveHeld(session.countedBytes)
        }
        parked[session.clientID] = session
        hasParked = true
        for filter in session.state.filters where filter.patterns.group == nil {
            for pattern in filter.patternList { index.subscribe(session, to: pattern) }
        }
        awayOrder.append(session)
        compactAwayOrder()
        scheduleExpiry()
    }

    /// The session leaves `parked` and the index, and lets go of the bytes it counted.
    func unpark(_ session: ParkedSession) {
        guard session.isParked else { return }
        session.isParked = false
        parked[session.clientID] = nil
        hasParked = !parked.isEmpty
        for filter in session.state.filters where filter.patterns.group == nil {
            for pattern in filter.patternList { index.unsubscribe(session, from: pattern) }
        }
        host.memory.releaseHeld(session.countedBytes)
        session.countedBytes = 0
        // It may wait in `awayOrder` a while yet: what it held goes now.
        session.state = MQTTSessionState()
        session.queued = []
    }

    /// A session dropped by a bound: it is gone, counted.
    func drop(_ session: ParkedSession) {
        guard session.isParked else { return }
        unpark(session)
        host.mqttStats.sessionsDropped &+= 1
    }

    /// Sessions kept for clients that are away.
    var parkedCount: Int { parked.count }

    /// The session parked longest that is still parked; entries of sessions gone before it leave the front.
    /// Amortised O(1): each entry leaves once.
    func oldestParked() -> ParkedSession? {
        while let first = awayOrder.first, !first.isParked { awayOrder.removeFirst() }
        return awayOrder.first
    }

    /// Keeps `awayOrder` within twice the parked sessions (plus 16): a client that comes and goes a million
    /// times behind an old session away must not leave a million entries. Amortised O(1) per park.
    private func compactAwayOrder() {
        guard awayOrder.count > 2 * parked.count + 16 else { return }
        awayOrder = Deque(awayOrder.filter(\.isParked))
    }

    /// An engine that answers later (several nodes) tells how a will's publish went; nobody waits for it.
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {
        if case .failure(let failure) = result {
            host.logger.warning("MQTT will not published: \(failure)")
        }
    }

    func tearDown() {
        live.removeAll()
        for session in Array(parked.values) { unpark(session) }
        awayOrder.removeAll()
        expiryTimer = nil
        wills.removeAll()
        willTimer.tearDown()
        hasParked = false
    }
}
