import FanoutConfig
import FanoutHistoryDisk
import FanoutServer
import Logging

/// Reads `ServerConfiguration` from environment variables (`FANOUTD_MAX_LINE`, ...) over an optional YAML
/// file, over the built-in defaults. A value of the wrong type, or a name that is no setting, is an error,
/// never silently the default.
struct ConfigLoader {
    typealias Problem = ConfigProblem

    /// The configuration in a file and the environment, and the reader it came from (which knows the lines).
    static func load(path: String?) throws -> (ServerConfiguration, SettingsReader) {
        try SettingNames.checkEnvironment(TextFile.environmentNames())
        var document = YAMLDocument(settings: [:], lineNumbers: [:])
        if let path {
            do {
                document = try YAMLReader.read(try TextFile.read(path))
            } catch {
                throw Problem(description: "cannot read config file \(path): \(error)")
            }
        }
        let reader = SettingsReader(file: document, environment: { TextFile.environment($0) })
        do {
            try SettingNames.checkFile(document)
            var configuration = try read(reader)
            configuration.auth.users = try UsersSection.read(document.settings["users"], in: document)
            configuration.history.rules = try HistorySection.read(document.settings["history"], in: document)
            configuration.cluster = try ClusterSection.read(document.settings["cluster"], in: document)
            return (configuration, reader)
        } catch let problem as Problem where problem.line != nil {
            // Only the file has lines, so there is a path to name.
            throw Problem(description: "\(path ?? "the config file"): \(problem)")
        }
    }

    /// The configuration's own checks (ranges, addresses), each pointing at its line in `path` when the
    /// setting came from there and no command-line option replaced it.
    static func check(_ configuration: ServerConfiguration, reader: SettingsReader, path: String?,
                      overridden: Set<String>) throws {
        let problems = configuration.problems()
        guard !problems.isEmpty else { return }
        let located = problems.map { problem -> String in
            // Problems start with the setting's name, or names joined by '/' ("http_listen/metrics_listen: ...").
            let names = problem.prefix { $0 != ":" }.split(separator: "/").map(String.init)
            let line = names.lazy.filter { !overridden.contains($0) && Setting.named($0) != nil }
                .compactMap { reader.line(of: $0) }.first
            guard let line, let path else { return problem }
            return "\(path): line \(line): \(problem)"
        }
        throw Problem(description: located.joined(separator: "; "))
    }

    static func read(_ reader: SettingsReader) throws -> ServerConfiguration {
        var server = ServerConfiguration()
        if let listen = try reader.strings("listen") { server.listeners.listen = listen }
        if let name = try reader.string("server_name") { server.serverName = name }
        if let value = try reader.int("max_line") { server.limits.maxLine = value }
        if let value = try reader.int("max_connections") { server.limits.maxConnections = value }
        if let value = try reader.int("max_subscriptions") { server.limits.maxSubscriptions = value }
        if let value = try reader.int("max_payload") { server.limits.maxPayload = value }
        if let value = try reader.int("max_asks") { server.limits.maxAsks = value }
        if let value = try reader.int("max_ask_timeout") { server.limits.maxAskTimeoutMilliseconds = value }
        if let value = try reader.int("max_open_questions") { server.limits.maxOpenQuestions = value }
        if let value = try reader.int("max_pending_bytes") { server.limits.maxPendingBytes = value }
        if let value = try reader.int("backpressure_bytes") { server.limits.backpressureBytes = value }
        if let value = try reader.int("send_buffer_bytes") { server.limits.sendBufferBytes = value }
        if let value = try reader.seconds("write_timeout") { server.timeouts.writeTimeout = value }
        if let value = try reader.seconds("idle_timeout") { server.timeouts.idleTimeout = value == .zero ? nil : value }
        if let value = try reader.seconds("shutdown_grace") { server.timeouts.shutdownGrace = value }
        if let value = try reader.seconds("keepalive") { server.timeouts.keepalive = value == .zero ? nil : value }
        if let value = try reader.int("max_tracked_subjects") { server.limits.maxTrackedSubjects = value }
        if let value = try reader.int("max_memory") { server.limits.maxMemory = value }
        if let value = try reader.int("history_max_bytes") { server.history.maxBytes = value }
        if let text = try reader.string("history_dir") { server.history.directory = text.isEmpty || text == "off" ? nil : text }
        if let text = try reader.string("history_fsync") {
            guard let policy = FsyncPolicy(rawValue: text) else {
                throw Problem(line: reader.line(of: "history_fsync"),
                              "history_fsync: expected always, everysec or no, found '\(text)'")
            }
            server.history.fsync = policy
        }
        if let text = try reader.string("log_level") {
            guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
                throw Problem(line: reader.line(of: "log_level"),
                              "log_level: expected one of trace, debug, info, notice, warning, error, critical, found '\(text)'")
            }
            server.logLevel = parsed
        }
        let metricsListen = try reader.string("metrics_listen")
        let httpListen = try reader.string("http_listen")
        if let metricsListen, let httpListen, metricsListen != httpListen {
            throw Problem(line: reader.line(of: "metrics_listen"),
                          "http_listen and metrics_listen (its old name) name different addresses; keep http_listen")
        }
        if let text = httpListen ?? metricsListen { server.listeners.httpListen = text.isEmpty ? nil : text }
        if let text = try reader.string("https_listen") { server.listeners.httpsListen = text.isEmpty ? nil : text }
        if let origins = try reader.strings("http_allowed_origins") { server.listeners.httpAllowedOrigins = origins }
        if let value = try reader.seconds("auth_timeout") { server.auth.authTimeout = value }
        if let value = try reader.int("max_auth_failures") { server.auth.maxAuthFailures = value }
        if let value = try reader.int("max_unauthenticated") { server.auth.maxUnauthenticated = value }
        if let value = try reader.seconds("idle_unsubscribed_timeout") {
            server.timeouts.idleUnsubscribedTimeout = value == .zero ? nil : value
        }
        if let value = try reader.seconds("tls_handshake_timeout") { server.timeouts.tlsHandshakeTimeout = value }
        if let value = try reader.seconds("http_request_timeout") { server.timeouts.httpRequestTimeout = value }
        try TokenSection.read(reader, into: &server.auth.tokens)
        if let verbs = try reader.strings("admin_commands") { server.auth.adminCommands = Set(verbs.map { $0.uppercased() }) }
        if let value = try reader.int("max_connections_per_ip") { server.limits.maxConnectionsPerIP = value == 0 ? nil : value }
        if let value = try reader.int("max_connections_per_user") {
            server.userLimits.maxConnectionsPerUser = value == 0 ? nil : value
        }
        if let value = try reader.int("user_publish_rate") { server.userLimits.publishRate = value == 0 ? nil : value }
        if let value = try reader.int("user_publish_burst") { server.userLimits.publishBurst = value }
        if let list = try reader.strings("tls_listen") { server.tls.listen = list }
        if let patterns = try reader.strings("presence") { server.presence.patterns = patterns }
        try readMQTT(reader, into: &server.mqtt)
        if let text = try reader.string("tls_cert") { server.tls.certificate = text }
        if let text = try reader.string("tls_key") { server.tls.key = text }
        if let text = try reader.string("tls_client_ca") { server.tls.clientCA = text.isEmpty ? nil : text }
        if let text = try reader.string("unix_socket_mode") {
            guard let mode = UInt32(text.hasPrefix("0o") ? String(text.dropFirst(2)) : text, radix: 8) else {
                throw Problem(line: reader.line(of: "unix_socket_mode"),
                              "unix_socket_mode: expected an octal mode like \"0660\", found '\(text)'")
            }
            server.listeners.unixSocketMode = mode
        }
        // Left unset, these two follow the ones they depend on; set, a contradiction is refused (`Limits.problems`).
        if try reader.int("max_pending_bytes") == nil {
            server.limits.sizePendingBytes(payloadSet: try reader.int("max_payload") != nil)
        }
        if try reader.int("max_payload") == nil { server.limits.sizePayloadToPendingBytes() }
        if try reader.int("max_asks") == nil {
            server.limits.maxAsks = min(server.limits.maxAsks, Limits.loneAskerShare(of: server.limits.maxOpenQuestions))
        }
        return server
    }

    /// The mqtt_ settings (docs/mqtt.md); a session expiry of 0 keeps sessions until mqtt_max_sessions.
    static func readMQTT(_ reader: SettingsReader, into mqtt: inout MQTTSettings) throws {
        if let list = try reader.strings("mqtt_listen") { mqtt.listen = list }
        if let list = try reader.strings("mqtt_tls_listen") { mqtt.tlsListen = list }
        if let value = try reader.int("mqtt_max_retained") { mqtt.maxRetained = value }
        if let value = try reader.int("mqtt_max_sessions") { mqtt.maxSessions = value }
        if let value = try reader.int("mqtt_session_max_messages") { mqtt.sessionMaxMessages = value }
        if let value = try reader.seconds("mqtt_session_expiry") { mqtt.sessionExpiry = value == .zero ? nil : value }
    }
}
