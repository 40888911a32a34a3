import FanoutProtocol

/// Per-user limits (max_connections_per_user, user_publish_rate and user_publish_burst): each user's live
/// connections and publish bucket, over every transport. A user is a users-file name or a token's `sub`; a
/// connection of a server without users has none and is never counted. Owned by the server; told of a
/// connection becoming a user's (`admit`), of its departure (`release`), and asked on each publish while a
/// rate is set (`takePublish`).
///
/// Settings are passed in, never kept: a reload applies at once. A lowered connection limit refuses new
/// connections only; the ones already over it stay.
final class UserLimits {
    /// One user's share: its live connections and its publish bucket. A class, so that a publishing connection
    /// keeps a reference to its user's entry (`ConnectionExtras.userLimit`) and finds it without a lookup.
    final class Entry {
        let user: String
        var connections = 0
        /// Made full on the first publish under a rate.
        var bucket: Bucket?

        init(user: String) { self.user = user }
    }

    /// Worst case: one entry per user with a live connection (at most max_connections), plus users without one
    /// whose bucket is still refilling after an HTTP publish or a departure (at most as many again, and 64:
    /// `sweep` drops the refilled ones whenever the table has doubled since it last ran).
    private(set) var entries: [String: Entry] = [:]
    /// Entries left after the last sweep: the next runs when there are twice as many.
    private var sweptCount = 0
    /// AUTHs and HTTP upgrades/streams refused at max_connections_per_user, since start.
    var connectionRefusals: UInt64 = 0
    /// Publishes refused over user_publish_rate, since start.
    var publishRefusals: UInt64 = 0

    /// The users holding connections, and how many each (for tests and INFO).
    func connections(of user: String) -> Int { entries[user]?.connections ?? 0 }

    /// A connection becomes `user`'s (it was `previous`'s, or no one's): counted, unless the user already
    /// holds max_connections_per_user, when the refusal is returned and nothing changes.
    func admit(_ user: String, replacing previous: String?, settings: UserLimitSettings) -> ProtocolError? {
        guard user != previous else { return nil }
        let entry = entries[user]
        if let max = settings.maxConnectionsPerUser, let entry, entry.connections >= max {
            connectionRefusals &+= 1
            return Self.connectionRefusal(user: user, max: max)
        }
        release(previous, settings: settings)
        made(entry, for: user, settings: settings).connections += 1
        return nil
    }

    /// A connection becomes `user`'s whatever the limit (an HTTP request that was checked before its upgrade).
    func count(_ user: String, settings: UserLimitSettings) {
        made(entries[user], for: user, settings: settings).connections += 1
    }

    /// Whether one more connection of `user` would be refused (an HTTP request checks before it upgrades).
    func refusesConnection(of user: String, settings: UserLimitSettings) -> ProtocolError? {
        guard let max = settings.maxConnectionsPerUser, connections(of: user) >= max else { return nil }
        connectionRefusals &+= 1
        return Self.connectionRefusal(user: user, max: max)
    }

    /// A connection of `user` left (or became another user's).
    func release(_ user: String?, settings: UserLimitSettings) {
        guard let user, let entry = entries[user] else { return }
        entry.connections -= 1
        if entry.connections <= 0 && isRefilled(entry, settings: settings, at: .now) { entries[user] = nil }
    }

    /// The entry of `user`, made if it has none: a user publishing over HTTP without a live connection has one
    /// too, so that its rate holds across requests.
    func entry(of user: String, settings: UserLimitSettings) -> Entry {
        made(entries[user], for: user, settings: settings)
    }

    /// One publish by `entry`'s user under user_publish_rate: nil when it may go, else the refusal.
    func takePublish(_ entry: Entry, settings: UserLimitSettings,
                     at now: ContinuousClock.Instant = .now) -> ProtocolError? {
        guard let rate = settings.publishRate else { return nil }
        let burst = settings.burst
        var bucket = entry.bucket ?? Bucket(burst: burst, at: now)
        let allowed = bucket.take(rate: rate, burst: burst, at: now)
        entry.bucket = bucket
        if allowed { return nil }
        publishRefusals &+= 1
        return ProtocolError(.limit, "publish rate for user \(entry.user) over user_publish_rate \(rate)/s")
    }

    static func connectionRefusal(user: String, max: Int) -> ProtocolError {
        ProtocolError(.limit, "too many connections for user \(user) (max_connections_per_user \(max))")
    }

    private func made(_ entry: Entry?, for user: String, settings: UserLimitSettings) -> Entry {
        if let entry { return entry }
        if entries.count >= max(64, 2 * sweptCount) { sweep(settings: settings, at: .now) }
        let made = Entry(user: user)
        entries[user] = made
        return made
    }

    /// Drops the entries of users without connections whose bucket has refilled (or who never published):
    /// they hold nothing a new entry would not. Cost: a scan of the entries, once per doubling.
    private func sweep(settings: UserLimitSettings, at now: ContinuousClock.Instant) {
        entries = entries.filter { $0.value.connections > 0 || !isRefilled($0.value, settings: settings, at: now) }
        sweptCount = entries.count
    }

    /// Whether the entry's bucket is full again at the rate in force (without a rate, or a bucket, it holds
    /// nothing a new entry would not).
    private func isRefilled(_ entry: Entry, settings: UserLimitSettings, at now: ContinuousClock.Instant) -> Bool {
        guard let bucket = entry.bucket, let rate = settings.publishRate else { return true }
        return bucket.isFull(rate: rate, burst: settings.burst, at: now)
    }
}
