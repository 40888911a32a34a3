/// How long the server waits for clients.
public struct Timeouts: Sendable, Equatable {
    /// How long pending output may go without any of it being written before the connection is dropped.
    public var writeTimeout = Duration.seconds(30)
    /// Close a connection that sends nothing for this long; nil means never.
    public var idleTimeout: Duration?
    /// The longest a closing connection may spend flushing its last lines to a peer that does not read them,
    /// and so the longest a shutdown waits.
    public var shutdownGrace = Duration.seconds(5)
    /// TCP keepalive idle time for accepted sockets; nil turns keepalive off.
    public var keepalive: Duration? = .seconds(60)

    public init() {}

    func problems() -> [String] {
        var found: [String] = []
        if writeTimeout <= .zero { found.append("write_timeout: must be positive") }
        if let idleTimeout, idleTimeout <= .zero { found.append("idle_timeout: must be positive, or 0 for off") }
        if shutdownGrace < .zero { found.append("shutdown_grace: must not be negative") }
        return found
    }
}
