import ArgumentParser
import FanoutConfig
import FanoutHistoryDisk
import FanoutEventLoop
import FanoutProtocol
import FanoutServer
#if canImport(Glibc)
import Glibc
#endif
import Logging

@main
struct Fanoutd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanoutd",
        abstract: "The Fanout publish/subscribe daemon.",
        discussion: """
            Clients subscribe to subjects and publish messages over a line protocol that netcat can speak:

              nc 127.0.0.1 7411
              SUB news.*
              PUB news.uk hello world

            Settings come from --config (YAML), then FANOUTD_* environment variables \
            (FANOUTD_MAX_LINE=...), then the options below; config/fanoutd.yaml documents every setting and \
            its default.

            Signals: SIGTERM or SIGINT stops gracefully (clients get -ERR shutting-down, and each connection \
            closes as soon as its last bytes are acknowledged, or after shutdown_grace seconds for a peer \
            that does not read; a second signal stops at once). SIGHUP re-reads the configuration and \
            applies limits, timeouts, log level and listen addresses without disconnecting anyone; an \
            invalid file is rejected and the running configuration kept.

            Under systemd: Type=notify readiness, STATUS= lines, the watchdog, and socket activation \
            (LISTEN_FDS) are supported; logs carry syslog priorities when stderr is the journal.

            Exit codes: 0 stopped cleanly, 1 could not start (e.g. address in use), 73 history_dir unusable, \
            78 bad configuration.
            """,
        version: FanoutVersion.current
    )

    @Option(name: .long, help: ArgumentHelp(
        "Address to listen on, HOST:PORT, [V6HOST]:PORT or unix:PATH; repeatable.", valueName: "address"))
    var listen: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "Address to serve HTTP on (metrics, health, WebSocket, publish, console), HOST:PORT.", valueName: "address"))
    var httpListen: String?

    @Option(name: .long, help: ArgumentHelp(
        "Address to serve the same over TLS (with tls_cert and tls_key), HOST:PORT.", valueName: "address"))
    var httpsListen: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("YAML configuration file.", valueName: "path"))
    var configOption: String?

    /// So that `fanoutd --check-config /etc/fanout/fanoutd.yaml` reads as it is written.
    @Argument(help: ArgumentHelp("The configuration file, as with --config.", valueName: "config-file"))
    var configFile: String?

    /// The file given either way; `validate()` refuses both at once.
    var config: String? { configOption ?? configFile }

    @Flag(name: .long, help: "Validate the configuration, print the settings in effect, and exit.")
    var checkConfig = false

    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical (overrides log_level).")
    var logLevel: String?

    @Flag(name: .long, help: ArgumentHelp(
        "Print a token_hash for the users section and exit: of the token on stdin, or of a new random token.",
        discussion: "  fanoutd --hash-token                      prints a new token and its hash\n  printf %s \"$TOKEN\" | fanoutd --hash-token"))
    var hashToken = false

    @Flag(name: .long, help: "With --hash-token: accept a token shorter than 16 bytes.")
    var force = false

    /// Tokens are checked with a fast hash (AUTH runs on the event loop), so only their length makes them
    /// hard to guess.
    static let minimumTokenBytes = 16

    mutating func validate() throws {
        if configOption != nil && configFile != nil {
            throw ValidationError("give the configuration file once: --config PATH or PATH")
        }
        if let logLevel, Logger.Level(rawValue: logLevel.lowercased()) == nil {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// Reads the file and environment, then applies the command line's overrides.
    /// Runs at start and on every SIGHUP, so a reload is refused for the same reasons, with the same lines.
    private func loadConfiguration() throws -> ServerConfiguration {
        var (configuration, reader) = try ConfigLoader.load(path: config)
        var overridden: Set<String> = []
        if !listen.isEmpty {
            configuration.listeners.listen = listen
            overridden.insert("listen")
        }
        if let httpListen {
            configuration.listeners.httpListen = httpListen.isEmpty ? nil : httpListen
            overridden.formUnion(["http_listen", "metrics_listen"])
        }
        if let httpsListen {
            configuration.listeners.httpsListen = httpsListen.isEmpty ? nil : httpsListen
            overridden.insert("https_listen")
        }
        if let logLevel { configuration.logLevel = Logger.Level(rawValue: logLevel.lowercased())! }
        try ConfigLoader.check(configuration, reader: reader, path: config, overridden: overridden)
        return configuration
    }

    func run() throws {
        if hashToken {
            Self.printTokenHash(force: force)
            return
        }
        let configuration: ServerConfiguration
        do {
            configuration = try loadConfiguration()
        } catch {
            Self.fail("configuration: \(error)", code: 78)
        }
        let problems = configuration.problems()
        if !problems.isEmpty {
            Self.fail("configuration: " + problems.joined(separator: "; "), code: 78)
        }
        if checkConfig {
            print(Self.describe(configuration))
            return
        }

        let forJournal = TextFile.environment("JOURNAL_STREAM") != nil
        LoggingSystem.bootstrap { _ in DaemonLogHandler(logLevel: .trace, forJournal: forJournal) }
        SignalWatcher.ignoreBrokenPipe()
        // The loop runs on this thread until shutdown; the server is created on the thread that runs it.
        do {
            let server = try Server(configuration: configuration, logger: Logger(label: "fanoutd"))
            server.notifier = SystemdNotifier()
            server.configurationLoader = { [self] in try self.loadConfiguration() }
            server.metricsBackend = PrometheusBackend.start
            let inherited = SocketActivation.inheritedListeners()
            unsetenv("LISTEN_FDNAMES")
            try server.start(inheritedFDs: inherited.lines, inheritedHTTPFD: inherited.http,
                             inheritedHTTPSFD: inherited.https, inheritedMQTTFDs: inherited.mqtt,
                             inheritedMQTTTLSFDs: inherited.mqtts)
            try server.run()
        } catch let error as DiskError {
            // EX_CANTCREAT: the history directory cannot be made, read or written.
            Self.fail("history_dir: \(error)", code: 73)
        } catch {
            Self.fail("\(error)", code: 1)
        }
    }

    private static func describe(_ server: ServerConfiguration) -> String {
        func seconds(_ duration: Duration?) -> String {
            guard let duration else { return "0 (off)" }
            let (whole, fraction) = duration.components
            return fraction == 0 ? "\(whole)" : String(Double(whole) + Double(fraction) / 1e18)
        }
        return """
            configuration OK
            listen: \(server.listeners.listen.joined(separator: ", "))
            server_name: \(server.serverName)
            max_line: \(server.limits.maxLine)
            max_connections: \(server.limits.maxConnections)
            max_subscriptions: \(server.limits.maxSubscriptions)
            max_payload: \(server.limits.maxPayload)
            max_asks: \(server.limits.maxAsks)
            max_ask_timeout: \(server.limits.maxAskTimeoutMilliseconds)
            max_open_questions: \(server.limits.maxOpenQuestions)
            max_pending_bytes: \(server.limits.maxPendingBytes)
            send_buffer_bytes: \(server.limits.sendBufferBytes == 0 ? "0 (kernel autotuning)" : String(server.limits.sendBufferBytes))
            write_timeout: \(seconds(server.timeouts.writeTimeout))
            idle_timeout: \(seconds(server.timeouts.idleTimeout))
            shutdown_grace: \(seconds(server.timeouts.shutdownGrace))
            keepalive: \(seconds(server.timeouts.keepalive))
            max_tracked_subjects: \(server.limits.maxTrackedSubjects)
            max_memory: \(server.limits.maxMemory == 0 ? "0 (off)" : String(server.limits.maxMemory))
            history: \(server.history.rules.isEmpty ? "none" : "")\(server.history.rules.map { "\n  - \($0)" }.joined())
            history_max_bytes: \(server.history.maxBytes)
            history_dir: \(server.history.directory ?? "off")
            history_fsync: \(server.history.fsync.rawValue)
            log_level: \(server.logLevel.rawValue)
            http_listen: \(server.listeners.httpListen ?? "off")
            https_listen: \(server.listeners.httpsListen ?? "off")
            http_allowed_origins: \(server.listeners.httpAllowedOrigins.isEmpty ? "own and loopback pages" : server.listeners.httpAllowedOrigins.joined(separator: ", "))
            users: \(server.auth.users.isEmpty ? (server.auth.tokens.isOn ? "none" : "none (auth=none)") : server.auth.users.map(\.name).joined(separator: ", "))
            auth_timeout: \(seconds(server.auth.authTimeout))
            max_auth_failures: \(server.auth.maxAuthFailures)
            max_unauthenticated: \(server.auth.maxUnauthenticated)
            idle_unsubscribed_timeout: \(seconds(server.timeouts.idleUnsubscribedTimeout))
            tls_handshake_timeout: \(seconds(server.timeouts.tlsHandshakeTimeout))
            http_request_timeout: \(seconds(server.timeouts.httpRequestTimeout))
            admin_commands: \(server.auth.adminCommands.sorted().joined(separator: ", "))
            max_connections_per_ip: \(server.limits.maxConnectionsPerIP.map(String.init) ?? "0 (off)")
            max_connections_per_user: \(server.userLimits.maxConnectionsPerUser.map(String.init) ?? "0 (off)")
            user_publish_rate: \(server.userLimits.publishRate.map(String.init) ?? "0 (off)")
            user_publish_burst: \(server.userLimits.publishRate == nil ? "off" : String(server.userLimits.burst))
            presence: \(server.presence.patterns.isEmpty ? "none" : server.presence.patterns.joined(separator: ", "))
            unix_socket_mode: 0\(String(server.listeners.unixSocketMode, radix: 8))
            tls_listen: \(server.tls.listen.isEmpty ? "off" : server.tls.listen.joined(separator: ", "))
            tls_client_ca: \(server.tls.clientCA ?? "off (no client certificates required)")
            mqtt_listen: \(server.mqtt.listen.isEmpty ? "off" : server.mqtt.listen.joined(separator: ", "))
            mqtt_tls_listen: \(server.mqtt.tlsListen.isEmpty ? "off" : server.mqtt.tlsListen.joined(separator: ", "))
            mqtt_max_retained: \(server.mqtt.maxRetained)
            mqtt_max_sessions: \(server.mqtt.maxSessions)
            mqtt_session_max_messages: \(server.mqtt.sessionMaxMessages)
            mqtt_session_expiry: \(server.mqtt.sessionExpiry.map { seconds($0) } ?? "0 (until mqtt_max_sessions)")
            \(TokenSection.describe(server.auth.tokens))
            \(ClusterSection.describe(server.cluster))
            """
    }

    /// `--hash-token`: hashes the token read from stdin (when stdin is not a terminal and has one), else a
    /// new 256-bit random token, which is printed too.
    private static func printTokenHash(force: Bool) {
        var token = ""
        if isatty(0) == 0 {
            token = String(decoding: TextFile.readAll(0) ?? [], as: UTF8.self)
            while token.last?.isNewline == true { token.removeLast() }
            while token.first?.isNewline == true { token.removeFirst() }
        }
        if token.isEmpty {
            var generator = SystemRandomNumberGenerator()
            token = Base64.encodeURLSafe((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            print("token: \(token)")
        }
        if token.utf8.count < minimumTokenBytes && !force {
            fail("the token is \(token.utf8.count) bytes; use at least \(minimumTokenBytes) random bytes " +
                 "(run --hash-token with no input for a new one), or add --force", code: 64)
        }
        print("token_hash: \(TokenHash.make(token: token))")
    }

    static func fail(_ message: String, code: Int32) -> Never {
        TextFile.write("fanoutd: \(message)\n", to: STDERR_FILENO)
        Glibc.exit(code)
    }
}
