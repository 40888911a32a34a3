import FanoutEventLoop
import FanoutProtocol
import FanoutTokens
import Logging

/// What the authenticator needs from the server: its configuration and log, closing a connection, pausing
/// one's commands, and taking back subscriptions a reload revokes.
protocol AuthHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var connections: ConnectionTable { get }
    /// Token checks, expiries and refreshes are counted there (INFO, /metrics).
    var stats: ServerStats { get set }
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

/// Who a connection is and what it may do: AUTH and HTTP tokens against the configured users or, when token
/// keys are configured, as application tokens (`Authenticator+Tokens.swift`), the failed attempts' throttle and
/// log, the deadlines to authenticate and to finish a TLS handshake, each user's shared grant, and the
/// permission checks and their reload (`Authenticator+Permissions.swift`).
///
/// Per connection it keeps only what a connection on a server with users needs (`sessions`, by id), a TLS
/// connection's handshake deadline, and a token connection's expiry (`tokenSessions`); a connection of a
/// server without users, or past its handshake, has no entry. Told of each arrival and departure by the
/// server (`connectionArrived`, `connectionLeft`).
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
    /// Kept in step with `settings` and the token connections so that opening a run does not scan the users.
    private(set) var anyUserWithholds: Bool
    /// Whether a configured user has subscribe-deny patterns (one half of `anyUserWithholds`).
    private var configuredUsersWithhold: Bool
    /// Token connections whose token's grant has subscribe-deny patterns (the other half).
    var withholdingTokenConnections = 0 {
        didSet { anyUserWithholds = configuredUsersWithhold || withholdingTokenConnections > 0 }
    }
    /// Checks application tokens; nil when no token key is configured.
    private(set) var verifier: TokenVerifier?
    /// Connections authenticated by an application token, with their expiry. Worst case: one entry per
    /// connection of a server with token keys.
    var tokenSessions: [UInt64: TokenSession] = [:]
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
        self.configuredUsersWithhold = Self.withholds(settings)
        self.anyUserWithholds = configuredUsersWithhold
        self.verifier = Self.verifier(for: settings.tokens)
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
        if fresh.tokens != old.tokens { verifier = Self.verifier(for: fresh.tokens) }
        return old
    }

    /// The reload's last step for authentication: each connection's new permissions when the users changed.
    func apply(replacing old: AuthSettings) {
        configuredUsersWithhold = Self.withholds(settings)
        anyUserWithholds = configuredUsersWithhold || withholdingTokenConnections > 0
        if settings.users != old.users || settings.requiresAuth != old.requiresAuth
            || settings.tokens.isOn != old.tokens.isOn {
            reapplyPermissions()
        }
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
        if !tokenSessions.isEmpty { tokenSessionEnded(connection) }
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
        if let verifier, TokenVerifier.looksLikeJWT(token) {
            return authenticate(connection, jwt: token, with: verifier, at: now)
        }
        guard let matched = user(holding: token) else {
            throttle.recordFailure(connection.peerHost, at: now)
            fail(connection, ProtocolError(.denied, "invalid token"))
            return
        }
        if refusedOverUserLimit(connection, user: matched.name) { return }
        if connection.grant == nil { unauthenticated -= 1 }
        // A users-file token replaces an application token, and its expiry with it.
        if !tokenSessions.isEmpty { tokenSessionEnded(connection) }
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
    func fail(_ connection: ClientConnection, _ error: ProtocolError, reason: String? = nil) {
        sessions[connection.id, default: Session()].failures += 1
        let failures = sessions[connection.id]?.failures ?? 0
        logFailure(connection, reason: reason)
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
    /// `reason` is a refused token's (bad signature, expired, ...): never the token or a key.
    func logFailure(_ connection: ClientConnection, reason: String? = nil) {
        logFailure(from: connection.peerHost, peer: "\(connection.peer)", client: "\(connection.id)", reason: reason,
                   failures: sessions[connection.id]?.failures ?? 0)
    }

    /// The same for an HTTP request's token (`client` is the request's id).
    func logFailure(from source: String, peer: String, client: String, reason: String?, failures: Int) {
        if failureLog == nil {
            failureLog = LogThrottle(loop: loop) { [unowned self] count, sources in
                self.host.logger.info("\(count) more failed AUTH attempts in the last \(SuppressedLog.interval)",
                                      metadata: ["from": "\(sources.joined(separator: ","))"])
            }
        }
        guard failureLog?.shouldWrite(from: source) == true else { return }
        var metadata: Logger.Metadata = ["client": "\(client)", "peer": "\(peer)", "failures": "\(failures)"]
        if let reason { metadata["reason"] = "\(reason)" }
        host.logger.info("AUTH failed", metadata: metadata)
    }

    func tearDown() {
        failureLog = nil
        sessions.removeAll()
        tokenSessions.removeAll()
        handshakeDeadlines.removeAll()
    }
}
