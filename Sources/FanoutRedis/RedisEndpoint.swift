/// Where one Redis primary is: `redis://[:password@]host[:port]`.
public struct RedisEndpoint: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var password: String?

    public init(host: String, port: Int = 6379, password: String? = nil) {
        self.host = host
        self.port = port
        self.password = password
    }

    /// Parses a `redis://` URL. A user name before the password is accepted and ignored (AUTH with one
    /// argument, as in Redis before 6 and with the default user).
    public init(url: String) throws(RedisFailure) {
        guard url.hasPrefix("redis://") else { throw .unavailable("\(url): not a redis:// URL") }
        var rest = Substring(url.dropFirst("redis://".count))
        if let slash = rest.firstIndex(of: "/") {
            let database = rest[rest.index(after: slash)...]
            guard database.isEmpty || database == "0" else {
                throw .unavailable("\(url): only database 0 can be used (PUBLISH ignores databases)")
            }
            rest = rest[..<slash]
        }
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            let secret = credentials.firstIndex(of: ":").map { credentials[credentials.index(after: $0)...] } ?? credentials
            password = secret.isEmpty ? nil : String(secret)
            rest = rest[rest.index(after: at)...]
        }
        var host = String(rest)
        var port = 6379
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .unavailable("\(url): unclosed [") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                guard let parsed = Int(after.dropFirst()) else { throw .unavailable("\(url): bad port") }
                port = parsed
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let parsed = Int(rest[rest.index(after: colon)...]) else { throw .unavailable("\(url): bad port") }
            host = String(rest[..<colon])
            port = parsed
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw .unavailable("\(url): no host or bad port") }
        self.init(host: host, port: port, password: password)
    }

    /// `host:port`, never the password: for logs, INFO and `--check-config`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
