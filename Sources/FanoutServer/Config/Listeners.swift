import FanoutEventLoop

/// Where the server listens.
public struct Listeners: Sendable, Equatable {
    /// Addresses to listen on: `HOST:PORT`, `[V6HOST]:PORT` or `unix:PATH`.
    public var listen = ["127.0.0.1:7411"]
    /// Where to serve HTTP (`HOST:PORT`): `/metrics`, `/healthz`, WebSocket at `/ws`, publish and the
    /// console; nil turns it off. `metrics_listen` is read as an alias.
    public var httpListen: String?
    /// Origins whose pages may open a WebSocket (`https://app.example.com`, or `*` for any); empty allows
    /// only pages served from the same host as the request names (cross-site WebSocket hijacking).
    public var httpAllowedOrigins: [String] = []
    /// File mode of unix socket listeners (`listen: ["unix:/run/fanout/fanoutd.sock"]`).
    public var unixSocketMode: UInt32 = 0o660

    public init() {}

    func problems() -> [String] {
        var found: [String] = []
        if listen.isEmpty { found.append("listen: at least one address is needed") }
        if unixSocketMode > 0o777 { found.append("unix_socket_mode: must be an octal mode like \"0660\"") }
        for address in listen {
            if let problem = SocketAddress.problem(parsing: address) { found.append("listen: \(problem)") }
        }
        if let httpListen {
            if let problem = SocketAddress.problem(parsing: httpListen) {
                found.append("http_listen/metrics_listen: \(problem)")
            } else if httpListen.hasPrefix("unix:") {
                found.append("http_listen/metrics_listen: must be HOST:PORT")
            }
        }
        return found
    }
}

extension SocketAddress {
    /// Why `text` is not a usable address, or nil when it is.
    static func problem(parsing text: String) -> String? {
        do {
            _ = try SocketAddress(parsing: text)
            return nil
        } catch {
            return error.operation
        }
    }
}
