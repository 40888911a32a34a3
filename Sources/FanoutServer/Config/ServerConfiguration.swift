import FanoutEventLoop
import FanoutProtocol
import Logging

/// Everything the server needs to know, as plain values in small groups. Each default is stated once, where
/// its setting is declared, and is the documented one (config/fanoutd.yaml).
public struct ServerConfiguration: Sendable, Equatable {
    /// Where clients connect: plain listeners, metrics, unix socket mode.
    public var listeners = Listeners()
    /// TLS listeners and their certificates.
    public var tls = TLSSettings()
    /// What one connection, and the server, may hold.
    public var limits = Limits()
    /// What one user may take over all of its connections (max_connections_per_user, user_publish_rate).
    public var userLimits = UserLimitSettings()
    /// How long things may take.
    public var timeouts = Timeouts()
    /// Users, tokens and what they may do.
    public var auth = AuthSettings()
    /// Which subjects keep history, and how much in all.
    public var history = HistorySettings()
    /// Which subjects keep presence (WHO, joins and leaves).
    public var presence = PresenceSettings()
    /// The MQTT 3.1.1 listener and what it keeps (sessions, retained messages); off by default.
    public var mqtt = MQTTSettings()
    /// Redis shards shared with other nodes; nil (the default) for a standalone node.
    public var cluster: ClusterSettings?
    /// The name in the greeting line (default: this machine's host name).
    public var serverName = RawSocket.hostName()
    /// The lowest level logged.
    public var logLevel = Logger.Level.info

    public init() {}

    /// Problems that make the configuration unusable, one readable line each; empty when it is fine.
    public func problems() -> [String] {
        var found: [String] = []
        if serverName.isEmpty || serverName.utf8.contains(where: { $0 <= 0x20 || $0 > 0x7E }) {
            found.append("server_name: must be non-empty printable ASCII without spaces")
        }
        found += listeners.problems() + tls.problems() + limits.problems() + timeouts.problems() + auth.problems()
            + history.problems() + (cluster?.problems() ?? [])
        found += listeners.httpsProblems(tls)
        found += userLimits.problems()
        found += presence.problems()
        found += mqtt.problems() + mqtt.problems(listeners: listeners, tls: tls)
        if cluster != nil && history.directory != nil {
            found.append("history_dir: not with a cluster section: several nodes keep their history in Redis " +
                         "(remove history_dir, or set it to off)")
        }
        return found
    }
}
