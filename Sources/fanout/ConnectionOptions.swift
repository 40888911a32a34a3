import ArgumentParser
import FanoutClient
import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The options every subcommand shares: where the server is and how long to wait for it.
struct ConnectionOptions: ParsableArguments {
    @OptionGroup var target: ServerOptions

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for connecting and for each reply.", valueName: "seconds"))
    var timeout: Double = 5

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    var serverText: String { target.serverText }

    func resolvedAddress() throws -> SocketAddress { try target.resolvedAddress() }

    func clientOptions(reconnect: ReconnectPolicy = .never) -> ClientOptions {
        target.clientOptions(timeout: .milliseconds(Int64(timeout * 1000)), reconnect: reconnect)
    }
}

/// Where the server is and how to reach it: for `ask`, whose `--timeout` is the question's, with the usual
/// seconds for connecting and replies.
struct ServerOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Server address, HOST:PORT, [V6HOST]:PORT or unix:PATH (default: $FANOUT_SERVER, else 127.0.0.1:7411).",
        valueName: "address"))
    var server: String?

    @Option(name: .long, help: ArgumentHelp("Token for AUTH (default: $FANOUT_TOKEN).", valueName: "token"))
    var token: String?

    @Option(name: .long, help: ArgumentHelp("""
        Shell command that prints a fresh token (a JWT), run before each connection and when the server says \
        the token expired; the fresh token is sent with AUTH on the live connection.
        """, valueName: "command"))
    var tokenCommand: String?

    @Flag(name: .long, help: "Connect with TLS (the server's certificate is verified).")
    var tls = false

    @Option(name: .long, help: ArgumentHelp("CA file that signed the server's certificate (default: the system's).", valueName: "pem"))
    var ca: String?

    @Option(name: .long, help: ArgumentHelp("Client certificate, for servers that require one.", valueName: "pem"))
    var cert: String?

    @Option(name: .long, help: ArgumentHelp("Private key of --cert.", valueName: "pem"))
    var key: String?

    func validate() throws {
        if !tls && (ca != nil || cert != nil || key != nil) { throw ValidationError("--ca, --cert and --key need --tls") }
        if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together") }
        if tokenCommand != nil && token != nil { throw ValidationError("--token and --token-command: give one") }
        if tokenCommand?.allSatisfy(\.isWhitespace) == true { throw ValidationError("--token-command is empty") }
        if tokenCommand == nil, let token = resolvedToken {
            try checkWord(token == self.token ? "--token" : "FANOUT_TOKEN") { () throws(ClientError) in
                try CommandWords.checkAuthToken(token)
            }
        }
        _ = try resolvedAddress()
    }

    var serverText: String {
        server ?? ProcessEnvironment.value("FANOUT_SERVER") ?? "127.0.0.1:7411"
    }

    /// --token, else $FANOUT_TOKEN.
    var resolvedToken: String? { token ?? ProcessEnvironment.value("FANOUT_TOKEN") }

    func resolvedAddress() throws -> SocketAddress {
        do {
            return try SocketAddress(parsing: serverText)
        } catch {
            throw ValidationError("--server: \(error.operation)")
        }
    }

    func clientOptions(timeout: Duration = .seconds(5), reconnect: ReconnectPolicy = .never) -> ClientOptions {
        var options = ClientOptions(timeout: timeout, reconnect: reconnect,
                                    token: tokenCommand == nil ? resolvedToken : nil)
        if let tokenCommand {
            let command = TokenCommand(command: tokenCommand)
            options.tokenSource = { try command.fetch() }
        }
        if tls {
            let host = serverText.hasPrefix("[") ? String(serverText.dropFirst().prefix { $0 != "]" })
                : String(serverText.prefix { $0 != ":" })
            options.tls = TLSSettings(serverCA: ca, certificate: cert, privateKey: key, serverName: host)
        }
        return options
    }
}

/// Exit codes, documented in `fanout --help`.
enum ExitStatus {
    static let serverError: Int32 = 1
    static let connection: Int32 = 2
    static let timeout: Int32 = 3
    /// `ask`: the question closed with no answer.
    static let noAnswer: Int32 = 4
    static let usage: Int32 = 64
    /// `ask --reduce`: an answer the reduction cannot take (not a number for sum, min, max, and, or).
    static let badAnswer: Int32 = 65

    static func code(for error: ClientError) -> Int32 {
        switch error {
        case .server, .kicked: serverError
        case .timeout: timeout
        case .cannotConnect, .disconnected, .closed, .protocolViolation: connection
        case .invalid: usage
        }
    }
}
