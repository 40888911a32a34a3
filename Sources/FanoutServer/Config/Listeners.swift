import FanoutEventLoop
import FanoutHTTP

/// Where the server listens.
public struct Listeners: Sendable, Equatable {
    /// Addresses to listen on: `HOST:PORT`, `[V6HOST]:PORT` or `unix:PATH`.
    public var listen = ["127.0.0.1:7411"]
    /// Where to serve HTTP (`HOST:PORT`): `/metrics`, `/healthz`, WebSocket at `/ws`, publish and the
    /// console; nil turns it off. `metrics_listen` is read as an alias.
    public var httpListen: String?
    /// Origins whose pages may use `/ws`, `/events` and `/publish/...` (`https://app.example.com`,
    /// `https://*.example.com`, `null`, or `*` for any); empty allows this listener's own pages and loopback
    /// ones. Others get 403 before any upgrade (cross-site WebSocket hijacking); rules in `OriginPolicy`.
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
        for origin in httpAllowedOrigins {
            if let problem = OriginPolicy.problem(inEntry: origin) { found.append("http_allowed_origins: \(problem)") }
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
