/// How long the server waits for clients.
public struct Timeouts: Sendable, Equatable {
    /// How long pending output may go without any of it being written before the connection is dropped.
    public var writeTimeout = Duration.seconds(30)
    /// Close a connection that sends nothing for this long; nil means never.
    public var idleTimeout: Duration?
    /// The longest a closing connection may spend flushing its last lines to a peer that does not read them,
    /// and so the longest a shutdown waits.
    public var shutdownGrace = Duration.seconds(5)
    /// Close a connection that holds no subscription and sends nothing for this long, so that idle sockets
    /// cannot hold every slot; nil means never.
    public var idleUnsubscribedTimeout: Duration? = .seconds(60)
    /// Close a TLS connection whose handshake has not finished this long after it connected.
    public var tlsHandshakeTimeout = Duration.seconds(10)
    /// How long an HTTP client has to send its whole request (head and body): a client that trickles its
    /// headers (slowloris) holds a slot this long at most, then gets 408.
    public var httpRequestTimeout = Duration.seconds(10)
    /// TCP keepalive idle time for accepted sockets; nil turns keepalive off.
    public var keepalive: Duration? = .seconds(60)

    public init() {}

    func problems() -> [String] {
        var found: [String] = []
        if writeTimeout <= .zero { found.append("write_timeout: must be positive") }
        if let idleTimeout, idleTimeout <= .zero { found.append("idle_timeout: must be positive, or 0 for off") }
        if shutdownGrace < .zero { found.append("shutdown_grace: must not be negative") }
        if let idleUnsubscribedTimeout, idleUnsubscribedTimeout <= .zero {
            found.append("idle_unsubscribed_timeout: must be positive, or 0 for off")
        }
        if tlsHandshakeTimeout <= .zero { found.append("tls_handshake_timeout: must be positive") }
        if httpRequestTimeout <= .zero { found.append("http_request_timeout: must be positive") }
        return found
    }
}
