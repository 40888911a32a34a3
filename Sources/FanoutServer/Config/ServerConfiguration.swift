import FanoutEventLoop
import FanoutProtocol
import Logging

/// Everything the server needs to know, as plain values. Defaults are the documented ones (config/fanoutd.yaml).
public struct ServerConfiguration: Sendable, Equatable {
    /// Addresses to listen on, `HOST:PORT` or `[V6HOST]:PORT`.
    public var listen: [String] = Self.defaultListen
    /// The name in the greeting line (default: this machine's host name).
    public var serverName: String = Self.defaultServerName
    /// Longest accepted line in bytes (LF and a CR before it excluded).
    public var maxLine: Int = Self.defaultMaxLine
    /// Connections served at once; one more is answered `-ERR limit` and closed.
    public var maxConnections: Int = Self.defaultMaxConnections
    /// Subscriptions one connection may hold.
    public var maxSubscriptions: Int = Self.defaultMaxSubscriptions
    /// Unsent output above which a connection is dropped as a slow consumer.
    public var maxPendingBytes: Int = Self.defaultMaxPendingBytes
    /// `SO_SNDBUF` for client sockets (Linux keeps twice this); 0 leaves the kernel's autotuning, which lets a
    /// socket that is never read hold up to `net.ipv4.tcp_wmem`'s maximum, 4 MiB on Debian, on top of
    /// `maxPendingBytes`. Filling that with copies into cold memory was what a stalled subscriber cost everyone
    /// else; above the cap its backlog is shared references in user space, which cost next to nothing.
    public var sendBufferBytes: Int = Self.defaultSendBufferBytes
    /// Publisher backpressure: unsent output on a subscriber above which the publishers feeding it stop being
    /// read until it drains to half. 0 (the default) turns it off; slow consumers are then only dropped.
    public var backpressureBytes: Int = 0
    /// How long pending output may go without any of it being written before the connection is dropped.
    public var writeTimeout: Duration = Self.defaultWriteTimeout
    /// Close a connection that sends nothing for this long; nil means never.
    public var idleTimeout: Duration? = nil
    /// How long shutdown (and any closing connection) may spend flushing last lines.
    public var shutdownGrace: Duration = Self.defaultShutdownGrace
    /// TCP keepalive idle time for accepted sockets; nil turns keepalive off.
    public var keepalive: Duration? = Self.defaultKeepalive
    /// How many subjects' sequence numbers are remembered; see `SequenceTable`.
    public var maxTrackedSubjects: Int = Self.defaultMaxTrackedSubjects
    /// The lowest level logged.
    public var logLevel: Logger.Level = .info
    /// Where to serve `/metrics` and `/healthz` over HTTP (`HOST:PORT`); nil turns it off.
    public var metricsListen: String? = nil
    /// Users allowed in; when there are any, every connection must AUTH first (the greeting says so).
    public var users: [User] = []
    /// How long a connection may stay unauthenticated before it is closed.
    public var authTimeout: Duration = Self.defaultAuthTimeout
    /// Failed AUTH attempts after which the connection is closed; each failure first delays the next read.
    public var maxAuthFailures: Int = Self.defaultMaxAuthFailures
    /// Verbs that need a user with `admin: true` (when users are configured).
    public var adminCommands: Set<String> = Self.defaultAdminCommands
    /// Connections one client address may hold; nil means no per-address limit.
    public var maxConnectionsPerIP: Int? = nil
    /// Addresses that speak TLS (`HOST:PORT`), beside the plain `listen` ones.
    public var tlsListen: [String] = []
    /// PEM certificate chain for the TLS listeners.
    public var tlsCertificate: String? = nil
    /// PEM private key for the TLS listeners.
    public var tlsKey: String? = nil
    /// PEM CA bundle: when set, TLS clients must present a certificate it signed (mutual TLS).
    public var tlsClientCA: String? = nil
    /// File mode of unix socket listeners (`listen: ["unix:/run/fanout/fanoutd.sock"]`).
    public var unixSocketMode: UInt32 = Self.defaultUnixSocketMode

    public static let defaultUnixSocketMode: UInt32 = 0o660

    public static let defaultAuthTimeout = Duration.seconds(10)
    public static let defaultMaxAuthFailures = 3
    public static let defaultAdminCommands: Set<String> = ["INFO", "CLIENTS"]

    /// Whether connections must authenticate.
    public var requiresAuth: Bool { !users.isEmpty }

    public static let defaultListen = ["127.0.0.1:7411"]
    public static let defaultServerName = RawSocket.hostName()
    public static let defaultMaxLine = 65_536
    public static let defaultMaxConnections = 10_000
    public static let defaultMaxSubscriptions = 10_000
    public static let defaultMaxPendingBytes = 8 * 1024 * 1024
    public static let defaultSendBufferBytes = 512 * 1024
    public static let defaultWriteTimeout = Duration.seconds(30)
    public static let defaultShutdownGrace = Duration.seconds(5)
    public static let defaultKeepalive: Duration? = .seconds(60)
    public static let defaultMaxTrackedSubjects = 1_000_000

    public init() {}

    /// Unsent output at which the server stops reading a connection's commands until it drains to half:
    /// a client that floods commands without reading replies cannot grow its output without bound.
    public var readPauseBytes: Int { max(4096, min(256 * 1024, maxPendingBytes / 2)) }

    /// Problems that make the configuration unusable, one readable line each; empty when it is fine.
    public func problems() -> [String] {
        var found: [String] = []
        if listen.isEmpty { found.append("listen: at least one address is needed") }
        if serverName.isEmpty || serverName.utf8.contains(where: { $0 <= 0x20 || $0 > 0x7E }) {
            found.append("server_name: must be non-empty printable ASCII without spaces")
        }
        if maxLine < 64 || maxLine > 64 * 1024 * 1024 { found.append("max_line: must be 64 ... 67108864") }
        if maxConnections < 1 { found.append("max_connections: must be at least 1") }
        if maxSubscriptions < 1 { found.append("max_subscriptions: must be at least 1") }
        if maxPendingBytes < maxLine + 512 { found.append("max_pending_bytes: must be more than max_line + 512") }
        if writeTimeout <= .zero { found.append("write_timeout: must be positive") }
        if sendBufferBytes < 0 || sendBufferBytes > 1 << 30 {
            found.append("send_buffer_bytes: must be 0 (the kernel's autotuning) ... 1073741824")
        }
        if backpressureBytes < 0 || (backpressureBytes > 0 && backpressureBytes >= maxPendingBytes) {
            found.append("backpressure_bytes: must be 0 (off) or less than max_pending_bytes")
        }
        if let idleTimeout, idleTimeout <= .zero { found.append("idle_timeout: must be positive, or 0 for off") }
        if shutdownGrace < .zero { found.append("shutdown_grace: must not be negative") }
        if maxTrackedSubjects < 1 { found.append("max_tracked_subjects: must be at least 1") }
        if !tlsListen.isEmpty && (tlsCertificate == nil || tlsKey == nil) {
            found.append("tls_listen: needs tls_cert and tls_key")
        }
        if unixSocketMode > 0o777 { found.append("unix_socket_mode: must be an octal mode like \"0660\"") }
        if authTimeout <= .zero { found.append("auth_timeout: must be positive") }
        if maxAuthFailures < 1 { found.append("max_auth_failures: must be at least 1") }
        if let maxConnectionsPerIP, maxConnectionsPerIP < 1 { found.append("max_connections_per_ip: must be at least 1, or 0 for off") }
        let verbs = Set(["SUB", "UNSUB", "PUB", "CHANNELS", "INFO", "CLIENTS"])
        for verb in adminCommands where !verbs.contains(verb) {
            found.append("admin_commands: \(verb) is not one of \(verbs.sorted().joined(separator: ", "))")
        }
        for user in users {
            for pattern in user.permissions.publish + user.permissions.publishDeny + user.permissions.subscribe
                + user.permissions.subscribeDeny {
                if !Subject.isValidPattern(pattern) { found.append("users.\(user.name): '\(pattern)' is not a valid subject pattern") }
            }
        }
        for address in listen + tlsListen + (metricsListen.map { [$0] } ?? []) {
            do {
                _ = try SocketAddress(parsing: address)
            } catch {
                found.append(error.operation)
            }
        }
        return found
    }
}
