import FanoutEventLoop
import FanoutProtocol
import Logging

/// What the authenticator needs from the server: its configuration and log, closing a connection, pausing
/// one's commands, and taking back subscriptions a reload revokes.
protocol AuthHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var connections: ConnectionTable { get }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
    func holdCommands(of connection: ClientConnection) -> Bool
    func releaseCommands(of connection: ClientConnection)
    /// Takes back the subscriptions a reload revokes.
    var subscriptions: Subscriptions { get }
    /// Tells a connection of it, in order with any replay under way.
    var replays: Replays! { get }
    /// Each user's connections and publish bucket.
    var userLimits: UserLimits { get }
}

/// Who a connection is and what it may do: AUTH and HTTP tokens against the configured users, the failed
/// attempts' throttle and log, the deadlines to authenticate and to finish a TLS handshake, each user's shared
/// grant, and the permission checks and their reload (`Authenticator+Permissions.swift`).
///
/// Per connection it keeps only what a connection on a server with users needs (`sessions`, by id) and a TLS
/// connection's handshake deadline; a connection of a server without users, or past its handshake, has no
/// entry. Told of each arrival and departure by the server (`connectionArrived`, `connectionLeft`).
final class Authenticator {
    /// A connection's authentication on a server with users.
    struct Session {
        /// The authenticated user's name, for logs, the user's share of questions and permission reloads.
        var userName: String?
        var failures = 0
        /// Closes the connection at auth_timeout unless it has authenticated.
        var deadline: LoopTimer?
        /// Ends the pause after a failed AUTH.
        var retryDelay: LoopTimer?
    }

    unowned let host: any AuthHost
    let loop: EventLoop
    /// The running configuration's auth section, kept here (refreshed by `apply`) so that the publish path's
    /// check reads a field of this object instead of copying the configuration through the host.
    private(set) var settings: AuthSettings
    /// Whether any configured user has subscribe-deny patterns: only then are a run's receivers filtered.
    /// Kept in step with `settings` so that opening a run does not scan the users.
    private(set) var anyUserWithholds: Bool
    /// Failed-AUTH buckets per address.
    var throttle = AuthThrottle()
    /// Written once per interval at most; made on first use.
    private var failureLog: LogThrottle?
    /// Connections whose `grant` is nil: on a server that requires AUTH, those that have not passed it.
    var unauthenticated = 0
    /// Each user's permissions as the one object its connections share (refreshed when a reload changes them).
    var permissionsByUser: [String: SharedPermissions] = [:]
    /// Worst case: one entry per connection of a server with users.
    var sessions: [UInt64: Session] = [:]
    /// TLS connections whose handshake has not finished, with the timer that closes them at
    /// tls_handshake_timeout. Worst case: one per TLS connection still shaking hands.
    private var handshakeDeadlines: [UInt64: LoopTimer] = [:]

    init(host: any AuthHost, loop: EventLoop, settings: AuthSettings) {
        self.host = host
        self.loop = loop
        self.settings = settings
        self.anyUserWithholds = Self.withholds(settings)
    }

    private static func withholds(_ settings: AuthSettings) -> Bool {
        settings.users.contains { !$0.permissions.subscribeDeny.isEmpty }
    }

    /// A reload's new settings, taken together with the configuration: a command run during the reload's
    /// other steps (a cluster restart runs the commands held behind its PUBs) is checked against them.
    /// Returns the settings they replace, for `apply(replacing:)`.
    func adopt(_ fresh: AuthSettings) -> AuthSettings {
        let old = settings
        settings = fresh
        return old
    }

    /// The reload's last step for authentication: each connection's new permissions when the users changed.
    func apply(replacing old: AuthSettings) {
        anyUserWithholds = Self.withholds(settings)
        if settings.users != old.users { reapplyPermissions() }
    }

    /// Whether a connection that would have to authenticate must be refused: max_unauthenticated are waiting.
    var isFullOfUnauthenticated: Bool {
        settings.requiresAuth && unauthenticated >= settings.maxUnauthenticated
    }

    /// The authenticated user of `connection`, if any.
    func userName(of connection: ClientConnection) -> String? {
        sessions[connection.id]?.userName
    }

    /// A new connection: on a server with users it must AUTH within auth_timeout; on one without, it may do
    /// everything at once.
    func connectionArrived(_ connection: ClientConnection) {
        if settings.requiresAuth {
            unauthenticated += 1
            startDeadline(for: connection)
        } else {
            connection.grant = .unrestricted
        }
    }

    /// A departure: its timers stop and its entries go.
    func connectionLeft(_ connection: ClientConnection) {
        userConnectionLeft(connection)
        sessions[connection.id] = nil
        handshakeDeadlines[connection.id] = nil
        if connection.grant == nil { unauthenticated -= 1 }
    }

    /// Closes a TLS connection whose handshake has not finished within tls_handshake_timeout.
    func startHandshakeDeadline(for connection: ClientConnection) {
        let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in
            self.host.disconnect(connection, reason: .handshakeTimeout)
        }
        timer.schedule(after: host.configuration.timeouts.tlsHandshakeTimeout)
        handshakeDeadlines[connection.id] = timer
    }

    /// The TLS handshake of `connection` finished.
    func handshakeFinished(_ connection: ClientConnection) {
        handshakeDeadlines[connection.id] = nil
    }

    /// Closes the connection unless it authenticates within auth_timeout of connecting. Set once: failed
    /// attempts never extend it.
    func startDeadline(for connection: ClientConnection) {
        let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in
            if connection.grant == nil { self.host.disconnect(connection, reason: .authTimeout) }
        }
        timer.schedule(after: settings.authTimeout)
        sessions[connection.id, default: Session()].deadline = timer
    }

    /// `AUTH <token>`: every user's hash is checked (no early exit), so the time taken says nothing about
    /// which user, if any, came close. A failure delays the connection's next command, and the
    /// max_auth_failures-th failure closes it. An address that fails too often has its attempts refused
    /// unchecked for a while (`AuthThrottle`), however many connections it opens.
    func authenticate(_ connection: ClientConnection, token: String) {
        guard settings.requiresAuth else {
            connection.send(Encoder.ok("auth not required"))
            return
        }
        let now = ContinuousClock.now
        if let wait = throttle.admit(connection.peerHost, at: now) {
            let seconds = max(1, wait.components.seconds + (wait.components.attoseconds > 0 ? 1 : 0))
            // Refused unchecked, and closed: a guesser's connections must not hold slots while it waits.
            sessions[connection.id, default: Session()].failures += 1
            logFailure(connection)
            connection.send(ProtocolError(
                .denied, "too many failed AUTH attempts from \(connection.peerHost); try again in \(seconds)s").line)
            host.disconnect(connection, reason: .authFailures)
            return
        }
        guard let matched = user(holding: token) else {
            throttle.recordFailure(connection.peerHost, at: now)
            fail(connection, ProtocolError(.denied, "invalid token"))
            return
        }
        if refusedOverUserLimit(connection, user: matched.name) { return }
        if connection.grant == nil { unauthenticated -= 1 }
        connection.grant = sharedPermissions(of: matched)
        sessions[connection.id, default: Session()].userName = matched.name
        connection.extras?.lastPermittedSubject = []
        sessions[connection.id]?.failures = 0
        sessions[connection.id]?.deadline = nil
        connection.send(Encoder.ok())
        host.logger.info("authenticated", metadata: ["client": "\(connection.id)", "user": "\(matched.name)"])
    }

    /// The user whose hash `token` matches, every hash checked whatever matched first.
    func user(holding token: String) -> User? {
        var matched: User?
        for user in settings.users where user.tokenHash.matches(token) && matched == nil {
            matched = user
        }
        return matched
    }

    /// Answers a failed or refused AUTH, logs it (rate-limited), and delays the connection's next command,
    /// or closes it at max_auth_failures.
    private func fail(_ connection: ClientConnection, _ error: ProtocolError) {
        sessions[connection.id, default: Session()].failures += 1
        let failures = sessions[connection.id]?.failures ?? 0
        logFailure(connection)
        if failures >= settings.maxAuthFailures {
            connection.send(ProtocolError(.denied, "too many failed AUTH attempts; closing").line)
            host.disconnect(connection, reason: .authFailures)
            return
        }
        connection.send(error.line)
        guard host.holdCommands(of: connection) else { return }
        let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in
            self.host.releaseCommands(of: connection)
        }
        timer.schedule(after: .milliseconds(250) * failures)
        sessions[connection.id]?.retryDelay = timer
    }

    /// One line per failure at most every `SuppressedLog.interval`; the rest are summed up in one line then.
    private func logFailure(_ connection: ClientConnection) {
        if failureLog == nil {
            failureLog = LogThrottle(loop: loop) { [unowned self] count, sources in
                self.host.logger.info("\(count) more failed AUTH attempts in the last \(SuppressedLog.interval)",
                                      metadata: ["from": "\(sources.joined(separator: ","))"])
            }
        }
        guard failureLog?.shouldWrite(from: connection.peerHost) == true else { return }
        host.logger.info("AUTH failed", metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)",
                                                   "failures": "\(sessions[connection.id]?.failures ?? 0)"])
    }

    func tearDown() {
        failureLog = nil
        sessions.removeAll()
        handshakeDeadlines.removeAll()
    }
}
