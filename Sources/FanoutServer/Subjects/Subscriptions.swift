import DequeModule
import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutSubjects

/// What the subscriptions reach in the server: limits and counters, the engine that follows them (several
/// nodes), the memory bound, a connection's read timeout, and the dispatcher's holds and pending replies.
protocol SubscriptionsHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var stats: ServerStats { get set }
    /// Its `subscriptionCount` is the server-wide count.
    var connections: ConnectionTable { get set }
    var loop: EventLoop { get }
    /// The engine in use: on several nodes it follows the subscriptions.
    var engine: any Engine { get }
    /// Closed before the engine's interest changes (`engineSubscriptionsChanged`).
    var fanout: Fanout<Server> { get }
    /// The memory bound, which a large SUB must not pass.
    var memory: MemoryGuard! { get }
    func updateReadTimeout(of connection: ClientConnection)
    func holdCommands(of connection: ClientConnection) -> Bool
    func releaseCommands(of connection: ClientConnection)
    /// The replies an engine that answers later still owes.
    var replies: ReplyOrder { get }
    /// Told of every change to a subscription, for the members of kept subjects.
    var presence: Presence { get }
}

/// SUB, UNSUB and QSUB: subscriptions live in two directions, the subject index (pattern → weak members) and
/// each connection's own set (member → patterns), and are counted server-wide. These methods are the only
/// places that change them, so that the three never disagree. Large changes go a slice per loop pass
/// (`Subscriptions+Jobs.swift`), the engine follows them on several nodes (`Subscriptions+Engine.swift`), and
/// what departures leave in the index is swept in slices (`scheduleSweep`).
final class Subscriptions {
    unowned let host: any SubscriptionsHost
    let index: SubjectIndex<ClientConnection>
    /// SUBs and UNSUBs of many patterns under way, oldest first, and the timer that goes on with them.
    var jobs = Deque<SubscriptionJob>()
    var jobTimer = SliceTimer()
    /// Subscriptions left behind (dead members, emptied sets) since the last sweep of the index.
    private(set) var stale = 0
    /// `stale` when the sweep's current cycle began: what a finished cycle has certainly reclaimed.
    private var staleAtCycleStart = 0
    /// Runs the index's sweep in slices while departures left anything stale.
    private var sweepTimer = SliceTimer()
    /// The patterns each connection holds in a group (QSUB), with their group, by connection id; the other
    /// patterns of its `subscriptions` are plain. Only a connection that holds a pattern in a group has an entry,
    /// until it leaves. Bound: max_subscriptions patterns per connection.
    private var groupOfPattern: [UInt64: [String: String]] = [:]

    /// Patterns a sweep slice looks at: a few hundred microseconds.
    static let sweepBudget = 1024

    init(host: any SubscriptionsHost, index: SubjectIndex<ClientConnection>) {
        self.host = host
        self.index = index
    }

    /// `SUB` (plainly, `group` nil) or `QSUB` (as a member of `group`): subscribes to each pattern the
    /// connection does not hold yet, or to none if that would pass max_subscriptions, and moves the patterns
    /// it holds in another mode into this one. Replies with the count held afterwards.
    func subscribe(_ connection: ClientConnection, to patterns: [String], group: String? = nil) {
        // A set, not a scan of what came before: a 64 KiB line holds thousands of patterns.
        var fresh: [String] = []
        var moving: [String] = []
        var seen = Set<String>(minimumCapacity: patterns.count)
        let grouped = groupedPatterns(of: connection)
        for pattern in patterns where seen.insert(pattern).inserted {
            if !connection.subscriptions.contains(pattern) {
                fresh.append(pattern)
            } else if grouped[pattern] != group {
                moving.append(pattern)
            }
        }
        // Deep wildcard patterns would let a publish walk most of the index: their depth and stars are capped.
        for pattern in fresh {
            if let problem = Subject.wildcardPatternProblem(pattern) {
                host.stats.limitRefusals += 1
                connection.send(ProtocolError(.limit, problem).line)
                return
            }
        }
        let limits = host.configuration.limits
        guard connection.subscriptions.count + fresh.count <= limits.maxSubscriptions else {
            host.stats.limitRefusals += 1
            let limit = limits.maxSubscriptions
            let error = ProtocolError(
                .limit, "max_subscriptions=\(limit) reached (holding \(connection.subscriptions.count))")
            connection.send(error.line)
            return
        }
        if host.memory.indexWouldPassBound(adding: fresh.count) {
            host.stats.limitRefusals += 1
            connection.send(ProtocolError(.limit, "the server is at max_memory=\(limits.maxMemory)").line)
            return
        }
        for pattern in moving { changeMode(of: pattern, to: group, for: connection) }
        change(fresh, adding: true, group: group, for: connection)
    }

    /// Moves a held pattern between plain and a group, or between groups: counts and the cluster's interest
    /// stay as they are.
    func changeMode(of pattern: String, to group: String?, for connection: ClientConnection) {
        if let old = self.group(of: pattern, for: connection) {
            index.leave(connection, group: old, pattern: pattern)
        } else {
            index.unsubscribe(connection, from: pattern)
        }
        setGroup(group, of: pattern, for: connection)
        if let group {
            index.join(connection, group: group, pattern: pattern)
        } else {
            index.subscribe(connection, to: pattern)
        }
        // A member that changes mode leaves (unsub) and joins again with its new group.
        let presence = host.presence
        if presence.isOn {
            presence.unsubscribed(pattern, by: connection)
            presence.subscribed([pattern], group: group, by: connection)
        }
    }

    /// `UNSUB`: drops the named patterns the connection holds (all of them when none are named).
    func unsubscribe(_ connection: ClientConnection, from patterns: [String]) {
        change(patterns.isEmpty ? Array(connection.subscriptions) : patterns, adding: false, for: connection)
    }

    /// Adds patterns the connection does not hold yet, in both directions and the count.
    func add(_ patterns: [String], group: String? = nil, for connection: ClientConnection) {
        let wasUnsubscribed = connection.subscriptions.isEmpty
        for pattern in patterns {
            connection.subscriptions.insert(pattern)
            if let group {
                groupOfPattern[connection.id, default: [:]][pattern] = group
                index.join(connection, group: group, pattern: pattern)
            } else {
                index.subscribe(connection, to: pattern)
            }
        }
        host.connections.subscriptionCount += patterns.count
        engineSubscriptionsChanged(patterns, adding: true)
        let presence = host.presence
        if presence.isOn { presence.subscribed(patterns, group: group, by: connection) }
        if wasUnsubscribed && !patterns.isEmpty { host.updateReadTimeout(of: connection) }
    }

    /// Removes each of `patterns` that the connection holds, in both directions and the count; returns how
    /// many it held. Emptied patterns wait for the index's sweep.
    @discardableResult
    func remove(_ patterns: [String], for connection: ClientConnection) -> Int {
        var dropped = 0
        let presence = host.presence
        for pattern in patterns where connection.subscriptions.remove(pattern) != nil {
            if let group = self.group(of: pattern, for: connection) {
                setGroup(nil, of: pattern, for: connection)
                index.leave(connection, group: group, pattern: pattern)
            } else {
                index.unsubscribe(connection, from: pattern)
            }
            dropped += 1
            engineSubscriptionsChanged(CollectionOfOne(pattern), adding: false)
            if presence.isOn { presence.unsubscribed(pattern, by: connection) }
        }
        host.connections.subscriptionCount -= dropped
        stale += dropped
        scheduleSweep()
        if dropped > 0 && connection.subscriptions.isEmpty { host.updateReadTimeout(of: connection) }
        return dropped
    }

    /// A departing connection's subscriptions leave the count and the engine's interest. The index is not
    /// touched: its weak sets stop yielding the connection as soon as it is gone, and the sweep reclaims the
    /// entries (scheduled here), amortised over enough departures to cost O(1) each.
    /// Its memberships of kept subjects end with leaves that give `reason`.
    func connectionLeft(_ connection: ClientConnection, reason: DisconnectReason) {
        host.presence.connectionLeft(connection, reason: reason)
        engineSubscriptionsChanged(connection.subscriptions, adding: false)
        host.connections.subscriptionCount -= connection.subscriptions.count
        stale += connection.subscriptions.count
        if !groupOfPattern.isEmpty { groupOfPattern[connection.id] = nil }
        scheduleSweep()
    }

    /// The group in which `connection` holds `pattern`; nil when it holds it plainly, or not at all.
    func group(of pattern: String, for connection: ClientConnection) -> String? {
        groupOfPattern[connection.id]?[pattern]
    }

    /// The patterns `connection` holds in a group, with their group.
    func groupedPatterns(of connection: ClientConnection) -> [String: String] {
        groupOfPattern[connection.id] ?? [:]
    }

    private func setGroup(_ group: String?, of pattern: String, for connection: ClientConnection) {
        if let group {
            groupOfPattern[connection.id, default: [:]][pattern] = group
        } else if groupOfPattern[connection.id]?.removeValue(forKey: pattern) != nil,
                  groupOfPattern[connection.id]?.isEmpty == true {
            groupOfPattern[connection.id] = nil
        }
    }

    /// Keeps the index's memory in step with departures: a slice of the sweep every 10 ms while anything is
    /// stale, instead of a whole sweep on the spot. Entries that went stale during a cycle may lie behind its
    /// cursor, so a cycle ends the sweeping only if nothing went stale since it began.
    func scheduleSweep() {
        guard stale > 0 else { return }
        sweepTimer.schedule(on: host.loop, after: .milliseconds(10)) { [unowned self] in self.sweepStep() }
    }

    private func sweepStep() {
        guard index.sweepStep(budget: Self.sweepBudget) else { return scheduleSweep() }
        stale -= staleAtCycleStart
        staleAtCycleStart = stale
        scheduleSweep()
    }

    /// A server shutting down has no use for the sweep.
    func stopSweep() {
        sweepTimer.tearDown()
    }

    func tearDown() {
        jobTimer.tearDown()
        jobs.removeAll()
        sweepTimer.tearDown()
        groupOfPattern.removeAll()
    }
}
