import DequeModule
import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import Logging

/// What presence reaches in the server: the rules, the engine and fan-out it publishes through, and each
/// connection's user.
protocol PresenceHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var loop: EventLoop { get }
    var logger: Logger { get }
    var engine: any Engine { get }
    var fanout: Fanout<Server> { get }
    var auth: Authenticator { get }
    var connections: ConnectionTable { get }
    /// Ends a publication slice as a read ends: the run goes out and the engine records it.
    func readEnded()
}

/// Presence (1.3): the members of each kept subject, in join order, and their joins and leaves published on
/// `$presence.<subject>`. A member is a connection that holds a subscription to exactly the subject; the
/// subscriptions (`Subscriptions`) tell it of every change, and a closing connection of its departure.
///
/// Off (`presence: []`, the default), it costs one branch per SUB or UNSUB and nothing per connection; a
/// connection that is a member of nothing has nothing here. It is never on the PUB path.
final class Presence: PublishReceipts {
    unowned let host: any PresenceHost
    /// The members of every node (several nodes), set by the cluster node; nil standalone.
    var directory: PresenceDirectory?
    /// The configured patterns (`presence`), at most `PresenceSettings.maxPatterns`.
    private(set) var patterns: [String] = []
    /// Whether any subject keeps presence: checked first by every hook.
    private(set) var isOn = false
    /// The kept subjects that have members. Worst case: one room per concrete subscription the server holds
    /// (max_subscriptions per connection), each as `PresenceRoom` states plus its entry here (the subject's text
    /// and a reference); a room goes with its last member.
    private(set) var rooms: [String: PresenceRoom] = [:]
    /// Memberships over all rooms.
    private(set) var memberships = 0
    /// Joins so far: each membership's place in the order a closing connection's leaves go out.
    private var joinCount: UInt64 = 0
    /// Joins and leaves waiting for their slice (`Presence+Publishing.swift`).
    var queue = Deque<QueuedEvent>()
    var publishTimer = SliceTimer()
    /// Since when the engine refuses the oldest queued event (several nodes), nil while it takes them.
    var refusedSince: ContinuousClock.Instant?
    /// The publication slice's buffers, reused (`Presence+Publishing.swift`).
    var scratch = Scratch()
    /// Joins and leaves published (INFO's presence_events).
    var eventsPublished: UInt64 = 0
    /// Since when `PresenceRoom.Member.joinedAt` counts.
    let origin = ContinuousClock.now

    struct QueuedEvent {
        let subject: String
        let payload: String
    }

    init(host: any PresenceHost) {
        self.host = host
        apply(host.configuration.presence)
    }

    /// New rules (start, reload): joins follow them from now on. Members of a subject no longer kept are
    /// forgotten without leaves; a subject newly kept lists those who subscribe from now on.
    func apply(_ settings: PresenceSettings) {
        patterns = settings.patterns
        isOn = !patterns.isEmpty
        for (subject, room) in rooms where !matchesRule(subject) {
            memberships -= room.count
            rooms[subject] = nil
            // Forgotten here, and in the engine too: on several nodes the others would list them until this
            // node dies.
            guard let directory else { continue }
            for member in room.oldestMembers(room.count) {
                let user = host.connections[member.connectionID].flatMap { host.auth.userName(of: $0) }
                let shown = PresenceMember(client: client(member.connectionID), user: user, sinceSeconds: 0,
                                           group: member.group)
                directory.left(subject, member: shown, connectionID: member.connectionID)
            }
        }
    }

    /// Whether `subject` keeps presence: a concrete subject of at most `PresenceText.longestSubject` bytes,
    /// not itself a `$presence.` subject, that a configured pattern matches. Cost: a dictionary lookup for a
    /// subject with members, else up to one match per pattern.
    func keepsPresence(_ subject: String) -> Bool {
        guard isOn else { return false }
        if rooms[subject] != nil { return true }
        return matchesRule(subject)
    }

    private func matchesRule(_ subject: String) -> Bool {
        guard subject.utf8.count <= PresenceText.longestSubject, !subject.hasPrefix(PresenceText.subjectPrefix),
              !Subject.isWildcard(subject) else { return false }
        return patterns.contains { Subject.matches(pattern: $0, subject: subject) }
    }

    /// Why a connection's departure ends its memberships, as its leaves say it.
    func leaveReason(for reason: DisconnectReason) -> PresenceText.LeaveReason {
        switch reason {
        case .quit, .eof, .socketError, .webSocketClose, .framingLost, .authFailures, .authExpired, .memoryBound,
             .userLimit, .sessionTakenOver, .mqttProtocol:
            .closed
        case .idleTimeout, .authTimeout, .handshakeTimeout: .timeout
        case .slowConsumer: .slowConsumer
        case .kicked: .kicked
        case .shutdown: .shutdown
        }
    }

    // MARK: Joins and leaves, from the subscriptions

    /// `connection` now holds each of `subjects` (in `group`, or plainly): it joins those kept.
    func subscribed(_ subjects: [String], group: String?, by connection: ClientConnection) {
        for subject in subjects where keepsPresence(subject) {
            let room = rooms[subject] ?? makeRoom(subject)
            joinCount += 1
            guard room.join(connection.id, at: now, order: joinCount, group: group) else { continue }
            memberships += 1
            let member = PresenceMember(client: client(connection.id), user: host.auth.userName(of: connection),
                                        sinceSeconds: 0, group: group)
            directory?.joined(subject, member: member, connectionID: connection.id)
            announce(PresenceEvent(join: member), on: subject)
        }
    }

    /// `connection` no longer holds `subject` (UNSUB, a revoked subscription, or a move between plain and a
    /// group, which joins again after).
    func unsubscribed(_ subject: String, by connection: ClientConnection) {
        guard let room = rooms[subject], let member = room.leave(connection.id) else { return }
        left(subject, room: room, member, of: connection, reason: .unsub, at: now)
    }

    /// A departing connection leaves every subject it was a member of, one leave each, in the order it joined
    /// them. Cost: a lookup per subscription it held and a sort of its memberships, O(k log k).
    func connectionLeft(_ connection: ClientConnection, reason: DisconnectReason) {
        guard !rooms.isEmpty, !connection.subscriptions.isEmpty else { return }
        var ended: [(subject: String, room: PresenceRoom, member: PresenceRoom.Member)] = []
        for subject in connection.subscriptions {
            if let room = rooms[subject], let member = room.leave(connection.id) {
                ended.append((subject, room, member))
            }
        }
        guard !ended.isEmpty else { return }
        ended.sort { $0.member.order < $1.member.order }
        let why = leaveReason(for: reason)
        let time = now
        for (subject, room, member) in ended {
            left(subject, room: room, member, of: connection, reason: why, at: time)
        }
    }

    private func left(_ subject: String, room: PresenceRoom, _ member: PresenceRoom.Member,
                      of connection: ClientConnection, reason: PresenceText.LeaveReason, at time: Int64) {
        memberships -= 1
        if room.count == 0 { rooms[subject] = nil }
        let seconds = UInt64(max(0, time - member.joinedAt) / 1_000_000_000)
        let shown = PresenceMember(client: client(connection.id), user: host.auth.userName(of: connection),
                                   sinceSeconds: seconds, group: member.group)
        directory?.left(subject, member: shown, connectionID: connection.id)
        announce(PresenceEvent(leave: shown, reason: reason), on: subject)
    }

    private func makeRoom(_ subject: String) -> PresenceRoom {
        let room = PresenceRoom()
        rooms[subject] = room
        return room
    }

    /// Nanoseconds after `origin`.
    var now: Int64 {
        let elapsed = (ContinuousClock.now - origin).components
        return elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000
    }

    /// A client as `WHO` and the events name it: its id, or `<node>/<id>` on several nodes.
    func client(_ id: UInt64) -> String {
        if let directory { return "\(directory.nodeID)/\(id)" }
        return String(id)
    }

    /// INFO's presence fields.
    func infoFields() -> [InfoFields.Field] {
        [("presence_subjects", rooms.count), ("presence_members", memberships), ("presence_events", eventsPublished)]
    }

    func tearDown() {
        publishTimer.tearDown()
        queue.removeAll()
        rooms.removeAll()
        memberships = 0
    }
}
