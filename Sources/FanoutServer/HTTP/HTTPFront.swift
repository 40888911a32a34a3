import FanoutEventLoop

/// The HTTP listener and what it serves besides upgraded connections: requests being read, HTTP publishes
/// waiting on an engine, and the event streams' keep-alive.
struct HTTPFront {
    /// The listener (http_listen), or the one socket activation handed over for it.
    var listener: Listener?
    var inheritedListener: Listener?
    /// Connections reading their request, by id (the id a WebSocket upgrade keeps).
    var exchanges: [UInt64: HTTPExchange] = [:]
    /// Connections reading their request, per peer host, for max_connections_per_ip.
    var exchangesPerHost: [String: Int] = [:]
    /// HTTP publishes waiting for an engine's answer (several nodes), kept alive until it comes.
    var publishers: [UInt64: ClientConnection] = [:]
    /// Sends Server-Sent Events streams their keep-alive comments.
    var eventStreamTimer: LoopTimer?

    mutating func tearDown() {
        listener = nil
        inheritedListener = nil
        exchanges.removeAll()
        exchangesPerHost.removeAll()
        publishers.removeAll()
        eventStreamTimer = nil
    }
}
