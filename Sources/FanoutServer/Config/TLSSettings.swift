/// TLS listeners, beside the plain ones, and the files they need.
public struct TLSSettings: Sendable, Equatable {
    /// Addresses that speak TLS (`HOST:PORT`).
    public var listen: [String] = []
    /// PEM certificate chain for the TLS listeners.
    public var certificate: String?
    /// PEM private key for the TLS listeners.
    public var key: String?
    /// PEM CA bundle: when set, TLS clients must present a certificate it signed (mutual TLS).
    public var clientCA: String?

    public init() {}

    func problems() -> [String] {
        var found: [String] = []
        if !listen.isEmpty && (certificate == nil || key == nil) { found.append("tls_listen: needs tls_cert and tls_key") }
        for address in listen {
            if let problem = SocketAddress.problem(parsing: address) { found.append("tls_listen: \(problem)") }
        }
        return found
    }
}

import FanoutEventLoop
