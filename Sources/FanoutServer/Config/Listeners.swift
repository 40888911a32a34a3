import FanoutEventLoop
import FanoutHTTP

/// Where the server listens.
public struct Listeners: Sendable, Equatable {
    /// Addresses to listen on: `HOST:PORT`, `[V6HOST]:PORT` or `unix:PATH`.
    public var listen = ["127.0.0.1:7411"]
    /// Where to serve HTTP (`HOST:PORT`): `/metrics`, `/healthz`, WebSocket at `/ws`, publish and the
    /// console; nil turns it off. `metrics_listen` is read as an alias.
    public var httpListen: String?
    /// Where to serve the same over TLS (`HOST:PORT`), with tls_cert and tls_key; nil turns it off. Beside
    /// http_listen or instead of it.
    public var httpsListen: String?
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
        if let httpsListen {
            if let problem = SocketAddress.problem(parsing: httpsListen) {
                found.append("https_listen: \(problem)")
            } else if httpsListen.hasPrefix("unix:") {
                found.append("https_listen: must be HOST:PORT")
            }
        }
        return found
    }

    /// https_listen's problems that need the TLS settings: its certificate, and an address another listener
    /// already takes (port 0 excepted: the kernel gives each its own).
    func httpsProblems(_ tls: TLSSettings) -> [String] {
        guard let httpsListen, let address = try? SocketAddress(parsing: httpsListen) else { return [] }
        var found: [String] = []
        if tls.certificate == nil || tls.key == nil { found.append("https_listen: needs tls_cert and tls_key") }
        let others = [("http_listen", httpListen)] + listen.map { ("listen", $0) }
            + tls.listen.map { ("tls_listen", $0) }
        for (name, text) in others {
            guard let text, let other = try? SocketAddress(parsing: text), other.description == address.description,
                  !address.description.hasSuffix(":0") else { continue }
            found.append("https_listen: \(httpsListen) is also \(name); give each listener its own address")
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
