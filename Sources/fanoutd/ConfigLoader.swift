import FanoutServer
import Logging

/// Reads `ServerConfiguration` from environment variables (`FANOUTD_MAX_LINE`, ...) over an optional YAML
/// file, over the built-in defaults. A value of the wrong type is an error, never silently the default.
struct ConfigLoader {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// The settings, as written in the file (and, upper-cased with a `FANOUTD_` prefix, in the environment).
    enum Key: String, CaseIterable {
        case listen, serverName = "server_name", maxLine = "max_line", maxConnections = "max_connections"
        case maxSubscriptions = "max_subscriptions", maxPendingBytes = "max_pending_bytes"
        case backpressureBytes = "backpressure_bytes", sendBufferBytes = "send_buffer_bytes"
        case writeTimeout = "write_timeout", idleTimeout = "idle_timeout", shutdownGrace = "shutdown_grace"
        case keepalive, maxTrackedSubjects = "max_tracked_subjects", logLevel = "log_level", maxMemory = "max_memory"
        case metricsListen = "metrics_listen", httpListen = "http_listen", httpAllowedOrigins = "http_allowed_origins"
        case httpRequestTimeout = "http_request_timeout"
        case authTimeout = "auth_timeout", maxAuthFailures = "max_auth_failures", adminCommands = "admin_commands"
        case maxUnauthenticated = "max_unauthenticated", idleUnsubscribedTimeout = "idle_unsubscribed_timeout"
        case tlsHandshakeTimeout = "tls_handshake_timeout", historyMaxBytes = "history_max_bytes"
        case maxConnectionsPerIP = "max_connections_per_ip", unixSocketMode = "unix_socket_mode"
        case tlsListen = "tls_listen", tlsCert = "tls_cert", tlsKey = "tls_key", tlsClientCA = "tls_client_ca"
    }

    static func load(path: String?) throws -> ServerConfiguration {
        var file: [String: YAMLNode] = [:]
        if let path {
            do {
                file = try YAMLReader.parse(try TextFile.read(path))
            } catch {
                throw Problem(description: "cannot read config file \(path): \(error)")
            }
        }
        var configuration = try read(TypedReader(file: file, environment: TextFile.environment))
        if path != nil {
            configuration.auth.users = try UsersSection.read(file["users"])
            configuration.history.rules = try HistorySection.read(file["history"])
            configuration.cluster = try ClusterSection.read(file["cluster"])
        }
        return configuration
    }

    static func read(_ reader: TypedReader) throws -> ServerConfiguration {
        var server = ServerConfiguration()
        if let listen = try reader.strings(.listen) { server.listeners.listen = listen }
        if let name = try reader.string(.serverName) { server.serverName = name }
        if let value = try reader.int(.maxLine) { server.limits.maxLine = value }
        if let value = try reader.int(.maxConnections) { server.limits.maxConnections = value }
        if let value = try reader.int(.maxSubscriptions) { server.limits.maxSubscriptions = value }
        if let value = try reader.int(.maxPendingBytes) { server.limits.maxPendingBytes = value }
        if let value = try reader.int(.backpressureBytes) { server.limits.backpressureBytes = value }
        if let value = try reader.int(.sendBufferBytes) { server.limits.sendBufferBytes = value }
        if let value = try reader.seconds(.writeTimeout) { server.timeouts.writeTimeout = value }
        if let value = try reader.seconds(.idleTimeout) { server.timeouts.idleTimeout = value == .zero ? nil : value }
        if let value = try reader.seconds(.shutdownGrace) { server.timeouts.shutdownGrace = value }
        if let value = try reader.seconds(.keepalive) { server.timeouts.keepalive = value == .zero ? nil : value }
        if let value = try reader.int(.maxTrackedSubjects) { server.limits.maxTrackedSubjects = value }
        if let value = try reader.int(.maxMemory) { server.limits.maxMemory = value }
        if let value = try reader.int(.historyMaxBytes) { server.history.maxBytes = value }
        if let text = try reader.string(.logLevel) {
            guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
                throw Problem(description: "log_level: '\(text)' is not one of trace, debug, info, notice, warning, error, critical")
            }
            server.logLevel = parsed
        }
        let metricsListen = try reader.string(.metricsListen)
        let httpListen = try reader.string(.httpListen)
        if let metricsListen, let httpListen, metricsListen != httpListen {
            throw Problem(description: "http_listen and metrics_listen (its old name) name different addresses; keep http_listen")
        }
        if let text = httpListen ?? metricsListen { server.listeners.httpListen = text.isEmpty ? nil : text }
        if let origins = try reader.strings(.httpAllowedOrigins) { server.listeners.httpAllowedOrigins = origins }
        if let value = try reader.seconds(.authTimeout) { server.auth.authTimeout = value }
        if let value = try reader.int(.maxAuthFailures) { server.auth.maxAuthFailures = value }
        if let value = try reader.int(.maxUnauthenticated) { server.auth.maxUnauthenticated = value }
        if let value = try reader.seconds(.idleUnsubscribedTimeout) {
            server.timeouts.idleUnsubscribedTimeout = value == .zero ? nil : value
        }
        if let value = try reader.seconds(.tlsHandshakeTimeout) { server.timeouts.tlsHandshakeTimeout = value }
        if let value = try reader.seconds(.httpRequestTimeout) { server.timeouts.httpRequestTimeout = value }
        if let verbs = try reader.strings(.adminCommands) { server.auth.adminCommands = Set(verbs.map { $0.uppercased() }) }
        if let value = try reader.int(.maxConnectionsPerIP) { server.limits.maxConnectionsPerIP = value == 0 ? nil : value }
        if let list = try reader.strings(.tlsListen) { server.tls.listen = list }
        if let text = try reader.string(.tlsCert) { server.tls.certificate = text }
        if let text = try reader.string(.tlsKey) { server.tls.key = text }
        if let text = try reader.string(.tlsClientCA) { server.tls.clientCA = text.isEmpty ? nil : text }
        if let text = try reader.string(.unixSocketMode) {
            guard let mode = UInt32(text.hasPrefix("0o") ? String(text.dropFirst(2)) : text, radix: 8) else {
                throw Problem(description: "unix_socket_mode: '\(text)' is not an octal mode like \"0660\"")
            }
            server.listeners.unixSocketMode = mode
        }
        return server
    }
}

/// Typed look-ups that tell "absent" (nil) from "present but wrong" (a thrown `Problem` naming the key). A
/// `FANOUTD_<KEY>` environment variable wins over the file; in one, a list is written with commas.
struct TypedReader {
    let file: [String: YAMLNode]
    /// The value of an environment variable, or nil when it is not set.
    let environment: (String) -> String?

    private enum Source {
        case environment(String)
        case file(YAMLNode)
    }

    private func lookup(_ key: ConfigLoader.Key) -> Source? {
        if let text = environment("FANOUTD_" + key.rawValue.uppercased()) { return .environment(text) }
        guard let node = file[key.rawValue], node != .null else { return nil }
        return .file(node)
    }

    /// The text of a single value, or a `Problem` saying what was `expected`.
    private func scalar(_ key: ConfigLoader.Key, expected: String) throws -> String? {
        switch lookup(key) {
        case nil: return nil
        case .environment(let text), .file(.scalar(let text)): return text
        case .file: throw ConfigLoader.Problem(description: "\(key.rawValue): expected \(expected)")
        }
    }

    func string(_ key: ConfigLoader.Key) throws -> String? {
        try scalar(key, expected: "a string")
    }

    func strings(_ key: ConfigLoader.Key) throws -> [String]? {
        switch lookup(key) {
        case nil:
            return nil
        case .environment(let text):
            return text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingBlanks }
        case .file(.scalar(let text)):
            return [text]
        case .file(.sequence(let items)):
            return try items.map { item in
                guard case .scalar(let text) = item else {
                    throw ConfigLoader.Problem(description: "\(key.rawValue): expected a list of strings")
                }
                return text
            }
        case .file:
            throw ConfigLoader.Problem(description: "\(key.rawValue): expected a list of strings")
        }
    }

    func int(_ key: ConfigLoader.Key) throws -> Int? {
        let expected = "a whole number"
        guard let text = try scalar(key, expected: expected) else { return nil }
        guard let value = Int(text) else { throw ConfigLoader.Problem(description: "\(key.rawValue): expected \(expected)") }
        return value
    }

    /// Seconds as a number (fractions allowed), for durations.
    func seconds(_ key: ConfigLoader.Key) throws -> Duration? {
        let expected = "a number of seconds (0 or more)"
        guard let text = try scalar(key, expected: expected) else { return nil }
        guard let number = Double(text), number >= 0, number.isFinite else {
            throw ConfigLoader.Problem(description: "\(key.rawValue): expected \(expected)")
        }
        return .milliseconds(Int64((number * 1000).rounded()))
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingBlanks: String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
