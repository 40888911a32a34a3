import Configuration
import FanoutServer
import Logging
import SystemPackage

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
        case metricsListen = "metrics_listen"
        case authTimeout = "auth_timeout", maxAuthFailures = "max_auth_failures", adminCommands = "admin_commands"
        case maxUnauthenticated = "max_unauthenticated", idleUnsubscribedTimeout = "idle_unsubscribed_timeout"
        case tlsHandshakeTimeout = "tls_handshake_timeout", historyMaxBytes = "history_max_bytes"
        case maxConnectionsPerIP = "max_connections_per_ip", unixSocketMode = "unix_socket_mode"
        case tlsListen = "tls_listen", tlsCert = "tls_cert", tlsKey = "tls_key", tlsClientCA = "tls_client_ca"
    }

    static func load(path: String?) async throws -> ServerConfiguration {
        var providers: [any ConfigProvider] = [EnvironmentVariablesProvider().prefixKeys(with: "fanoutd")]
        if let path {
            do {
                providers.append(try await FileProvider<ConfigFileSnapshot>(filePath: FilePath(path)))
            } catch {
                throw Problem(description: "cannot read config file \(path): \(error)")
            }
        }
        var configuration = try read(ConfigReader(providers: providers))
        if let path {
            configuration.auth.users = try UsersSection.load(path: path)
            configuration.history.rules = try HistorySection.load(path: path)
        }
        return configuration
    }

    static func read(_ config: ConfigReader) throws -> ServerConfiguration {
        var server = ServerConfiguration()
        let reader = TypedReader(config: config)
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
        if let text = try reader.string(.metricsListen) { server.listeners.metricsListen = text.isEmpty ? nil : text }
        if let value = try reader.seconds(.authTimeout) { server.auth.authTimeout = value }
        if let value = try reader.int(.maxAuthFailures) { server.auth.maxAuthFailures = value }
        if let value = try reader.int(.maxUnauthenticated) { server.auth.maxUnauthenticated = value }
        if let value = try reader.seconds(.idleUnsubscribedTimeout) {
            server.timeouts.idleUnsubscribedTimeout = value == .zero ? nil : value
        }
        if let value = try reader.seconds(.tlsHandshakeTimeout) { server.timeouts.tlsHandshakeTimeout = value }
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

/// Typed look-ups that tell "absent" (nil) from "present but wrong" (a thrown `Problem` naming the key).
private struct TypedReader {
    let config: ConfigReader

    private func isPresent(_ key: ConfigLoader.Key) -> Bool {
        config.string(forKey: ConfigKey(key.rawValue)) != nil
            || config.stringArray(forKey: ConfigKey(key.rawValue)) != nil
    }

    func string(_ key: ConfigLoader.Key) throws -> String? {
        guard isPresent(key) else { return nil }
        guard let value = config.string(forKey: ConfigKey(key.rawValue)) else {
            throw ConfigLoader.Problem(description: "\(key.rawValue): expected a string")
        }
        return value
    }

    func strings(_ key: ConfigLoader.Key) throws -> [String]? {
        guard isPresent(key) else { return nil }
        if let values = config.stringArray(forKey: ConfigKey(key.rawValue)) { return values }
        if let value = config.string(forKey: ConfigKey(key.rawValue)) { return [value] }
        throw ConfigLoader.Problem(description: "\(key.rawValue): expected a list of strings")
    }

    func int(_ key: ConfigLoader.Key) throws -> Int? {
        guard isPresent(key) else { return nil }
        guard let value = config.int(forKey: ConfigKey(key.rawValue)) else {
            throw ConfigLoader.Problem(description: "\(key.rawValue): expected a whole number")
        }
        return value
    }

    /// Seconds as a number (fractions allowed), for durations.
    func seconds(_ key: ConfigLoader.Key) throws -> Duration? {
        guard isPresent(key) else { return nil }
        let number = config.double(forKey: ConfigKey(key.rawValue))
            ?? config.int(forKey: ConfigKey(key.rawValue)).map(Double.init)
        guard let number, number >= 0, number.isFinite else {
            throw ConfigLoader.Problem(description: "\(key.rawValue): expected a number of seconds (0 or more)")
        }
        return .milliseconds(Int64((number * 1000).rounded()))
    }
}
