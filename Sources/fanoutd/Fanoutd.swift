import ArgumentParser
import FanoutEventLoop
import FanoutServer
import Foundation
import Logging

@main
struct Fanoutd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanoutd",
        abstract: "The Fanout publish/subscribe daemon.",
        discussion: """
            Clients subscribe to subjects and publish messages over a line protocol that netcat can speak:

              nc 127.0.0.1 7411
              SUB news.*
              PUB news.uk hello world

            Settings come from --config (YAML), then FANOUTD_* environment variables (FANOUTD_MAX_LINE=...),
            then the options below; config/fanoutd.yaml documents every setting and its default.
            SIGTERM or SIGINT stops the daemon gracefully: clients get -ERR shutting-down and their output is
            flushed for up to shutdown_grace seconds.

            Exit codes: 0 stopped cleanly, 1 could not start (e.g. address in use), 78 bad configuration.
            """,
        version: FanoutVersion.current
    )

    @Option(name: .long, help: ArgumentHelp("Address to listen on, HOST:PORT or [V6HOST]:PORT; repeatable.",
                                             valueName: "host:port"))
    var listen: [String] = []

    @Option(name: .long, help: ArgumentHelp("YAML configuration file.", valueName: "path"))
    var config: String?

    @Flag(name: .long, help: "Validate the configuration, print the settings in effect, and exit.")
    var checkConfig = false

    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical (overrides log_level).")
    var logLevel: String?

    mutating func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel.lowercased()) == nil {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    func run() async throws {
        var loaded: ConfigLoader.Loaded
        do {
            loaded = try await ConfigLoader.load(path: config)
        } catch {
            Self.fail("configuration: \(error)", code: 78)
        }
        if !listen.isEmpty { loaded.server.listen = listen }
        if let logLevel { loaded.logLevel = Logger.Level(rawValue: logLevel.lowercased())! }
        let problems = loaded.server.problems()
        if !problems.isEmpty {
            Self.fail("configuration: " + problems.joined(separator: "; "), code: 78)
        }
        if checkConfig {
            print(Self.describe(loaded))
            return
        }

        let level = loaded.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        SignalWatcher.ignoreBrokenPipe()
        do {
            try await Self.serve(loaded.server)
        } catch {
            Self.fail("\(error)", code: 1)
        }
    }

    /// Runs the server on a thread of its own (the loop blocks), and returns when it has stopped.
    private static func serve(_ configuration: ServerConfiguration) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            let thread = Thread {
                do {
                    let server = try Server(configuration: configuration, logger: Logger(label: "fanoutd"))
                    try server.start()
                    try server.run()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "fanoutd-loop"
            thread.start()
        }
    }

    private static func describe(_ loaded: ConfigLoader.Loaded) -> String {
        let server = loaded.server
        func seconds(_ duration: Duration?) -> String {
            guard let duration else { return "0 (off)" }
            let (whole, fraction) = duration.components
            return fraction == 0 ? "\(whole)" : String(Double(whole) + Double(fraction) / 1e18)
        }
        return """
            configuration OK
            listen: \(server.listen.joined(separator: ", "))
            server_name: \(server.serverName)
            max_line: \(server.maxLine)
            max_connections: \(server.maxConnections)
            max_subscriptions: \(server.maxSubscriptions)
            max_pending_bytes: \(server.maxPendingBytes)
            write_timeout: \(seconds(server.writeTimeout))
            idle_timeout: \(seconds(server.idleTimeout))
            shutdown_grace: \(seconds(server.shutdownGrace))
            keepalive: \(seconds(server.keepalive))
            max_tracked_subjects: \(server.maxTrackedSubjects)
            log_level: \(loaded.logLevel.rawValue)
            """
    }

    static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("fanoutd: \(message)\n".utf8))
        Foundation.exit(code)
    }
}
