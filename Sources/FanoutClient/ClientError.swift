import FanoutProtocol

/// Why a client operation failed. Each case maps to one exit code in the `fanout` tool.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server could not be reached, or refused us at once (`-ERR limit` at connect).
    case cannotConnect(address: String, reason: String)
    /// The server answered `-ERR <code> <text>`.
    case server(ProtocolError)
    /// No reply within the timeout.
    case timeout(String)
    /// The connection was lost before the reply came.
    case disconnected(String)
    /// The client was closed by its owner.
    case closed
    /// The server sent something that is not protocol version 1.
    case protocolViolation(String)
    /// The request cannot be sent as given (a payload a line cannot carry, for a verb that needs a line).
    case invalid(String)
    /// The server closed this connection with `KICK` (protocol 1.3) and gave this reason: the client is closed
    /// for good, with no reconnect, and every command in flight or issued after fails with this.
    case kicked(String)

    public var description: String {
        switch self {
        case .cannotConnect(let address, let reason): "cannot connect to \(address): \(reason)"
        case .server(let error): "server error: \(error.code) \(error.text)"
        case .timeout(let what): "timed out \(what)"
        case .disconnected(let why): "connection lost: \(why)"
        case .closed: "client closed"
        case .protocolViolation(let line): "unexpected line from server: \(line)"
        case .invalid(let why): why
        case .kicked(let reason): "kicked by the server: \(reason)"
        }
    }
}

/// What happens to a client's connection, for logging and progress reports.
public enum ClientEvent: Equatable, Sendable {
    /// Connected and greeted (again, after a reconnect).
    case connected(serverName: String, reconnect: Bool)
    /// The connection was lost.
    case disconnected(reason: String)
    /// Another attempt follows after `delay`.
    case reconnecting(attempt: Int, delay: Duration)
    /// After a reconnect, the commands restoring the subscriptions are answered: `count` patterns are back.
    case resubscribed(count: Int)
    /// After a reconnect, restoring these patterns (or one resumed subject) failed; the next reconnect tries
    /// again.
    case resubscribeFailed(patterns: [String], error: ClientError)
    /// A subject was resumed after a reconnect (protocol 1.1): `recovered` messages are replayed next, and
    /// `missed` says what could not be. Also sent, with `.unknown`, when a message shows that the subject's
    /// numbering restarted unannounced.
    case resumed(subject: String, recovered: Int, missed: MissedMessages)
    /// A subject's sequence jumped within one numbering: messages were lost on the way (from a server without
    /// history, also across reconnects; its numbering may also have restarted).
    case gap(subject: String, expected: UInt64, received: UInt64)
    /// The server said the subject's numbering restarted, or messages were lost to it (`RESET`, several
    /// nodes): the next message of the subject has seq `seq + 1` under `epoch`.
    case reset(subject: String, epoch: String, seq: UInt64, missed: MissedMessages)
    /// The server is closing the connection and said why (`slow-consumer`, `shutting-down`, ...).
    case serverClosing(ProtocolError)
    /// The server withdrew subscriptions this connection may no longer hold (`-ERR denied revoked: ...`).
    case revoked(ProtocolError)
    /// The server pushed `-ERR auth-expired ...`: the connection's token expired (a fresh one is fetched from
    /// `ClientOptions.tokenSource` and sent with AUTH, when there is one), or, with `closing`, the grace ran out.
    case authExpired(ProtocolError)
    /// A fresh token could not be had (the source failed) or the server refused it; retried with backoff.
    case tokenRefreshFailed(String)
    /// The server pushed `-ERR kicked <reason>` (protocol 1.3): an administrator closed this connection. The
    /// client is closed (no `.disconnected`, no reconnect follow): this is its last event.
    case kicked(reason: String)
}

/// One message as delivered to a subscriber.
public struct Message: Equatable, Sendable {
    public let subject: String
    public let seq: UInt64
    public let payload: [UInt8]

    public init(subject: String, seq: UInt64, payload: [UInt8]) {
        self.subject = subject
        self.seq = seq
        self.payload = payload
    }

    /// The payload as text (invalid UTF-8 repaired).
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// Settings of a `FanoutClient`.
public struct ClientOptions: Sendable {
    /// Longest time to wait for connecting and for each reply.
    public var timeout: Duration = .seconds(5)
    public var reconnect: ReconnectPolicy = ReconnectPolicy()
    /// Sent with AUTH right after each greeting, before anything else.
    public var token: String?
    /// Gives a fresh token, when set: before each connection's AUTH (in place of `token`) and when the server
    /// pushes `-ERR auth-expired`, after which it goes as AUTH on the live connection, which keeps its
    /// subscriptions. Runs on the client's loop, which waits for it: it should be quick (a file, a local
    /// command). A failure throws; it is reported as `.tokenRefreshFailed` and retried with backoff.
    public var tokenSource: (@Sendable () throws -> String)?
    /// Speak TLS, with these files; nil for plain TCP.
    public var tls: TLSSettings?
    /// Longest server line accepted (pushes carry payloads up to the server's own max_line).
    public var maxLine: Int = 1 << 20
    /// Largest `BMSG` payload accepted (protocol 1.2; the server's `max_payload` defaults to 1 MiB).
    public var maxPayload: Int = 64 << 20

    public init(timeout: Duration = .seconds(5), reconnect: ReconnectPolicy = ReconnectPolicy(), token: String? = nil) {
        self.timeout = timeout
        self.reconnect = reconnect
        self.token = token
    }
}

/// How a client speaks TLS: the CA that signed the server's certificate (nil: the system's CAs), and a
/// client certificate for servers that require one.
public struct TLSSettings: Sendable, Equatable {
    public var serverCA: String?
    public var certificate: String?
    public var privateKey: String?
    /// The name the server's certificate must carry; nil means the host of the address (an IP is checked
    /// against the certificate's IP addresses).
    public var serverName: String?

    public init(serverCA: String? = nil, certificate: String? = nil, privateKey: String? = nil, serverName: String? = nil) {
        self.serverCA = serverCA
        self.certificate = certificate
        self.privateKey = privateKey
        self.serverName = serverName
    }
}
