import FanoutEventLoop

/// Where the server listens.
public struct Listeners: Sendable, Equatable {
    /// Addresses to listen on: `HOST:PORT`, `[V6HOST]:PORT` or `unix:PATH`.
    public var listen = ["127.0.0.1:7411"]
    /// Where to serve `/metrics` and `/healthz` over HTTP (`HOST:PORT`); nil turns it off.
    public var metricsListen: String?
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
        if let metricsListen, let problem = SocketAddress.problem(parsing: metricsListen) {
            found.append("metrics_listen: \(problem)")
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
