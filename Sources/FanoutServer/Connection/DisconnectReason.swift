import FanoutProtocol
import Logging

/// Why the server let go of a connection. Logged, and for some sent as a last `-ERR` line.
enum DisconnectReason: Equatable, Sendable, CustomStringConvertible {
    /// The client sent QUIT.
    case quit
    /// The client closed its side.
    case eof
    /// The socket failed (reset, broken pipe, other errors).
    case socketError(String)
    /// Output not read fast enough: over `max_pending_bytes`, or stalled for `write_timeout`.
    case slowConsumer(String)
    /// Nothing received for the named setting's time: `idle_timeout`, or `idle_unsubscribed_timeout` for a
    /// connection that holds no subscription.
    case idleTimeout(setting: String)
    /// The TLS handshake did not finish within `tls_handshake_timeout`.
    case handshakeTimeout
    /// The server is stopping.
    case shutdown
    /// No successful AUTH within auth_timeout.
    case authTimeout
    /// Too many failed AUTH attempts.
    case authFailures
    /// The connection's token expired and no fresh one came within token_expiry_grace.
    case authExpired
    /// A BPUB's bytes were followed by something other than a line end: the stream's framing is lost.
    case framingLost
    /// Among the largest holders of an unfinished payload while the server was over max_memory.
    case memoryBound(String)
    /// Its AUTH named a user that holds max_connections_per_user already.
    case userLimit(String)
    /// An administrator's `KICK` named it, with this reason.
    case kicked(String)
    /// Another MQTT connection connected with the same client identifier (MQTT-3.1.4-2).
    case sessionTakenOver
    /// An MQTT packet the standard says closes the connection (malformed, out of order, or one the server
    /// cannot act on), with the rule or reason.
    case mqttProtocol(String)
    /// A WebSocket's close handshake (the client's close, echoed) or a framing failure, with its close code.
    case webSocketClose(code: UInt16, reason: String)

    var description: String {
        switch self {
        case .quit: "quit"
        case .eof: "eof"
        case .socketError(let detail): detail
        case .slowConsumer(let detail): "slow-consumer (\(detail))"
        case .idleTimeout(let setting): "idle-timeout (\(setting))"
        case .handshakeTimeout: "tls-handshake-timeout"
        case .shutdown: "shutdown"
        case .authTimeout: "auth-timeout"
        case .authFailures: "auth-failures"
        case .authExpired: "auth-expired"
        case .webSocketClose(let code, let reason): "websocket-close \(code) (\(reason))"
        case .framingLost: "framing-lost"
        case .memoryBound(let detail): "memory-bound (\(detail))"
        case .userLimit(let detail): "user-limit (\(detail))"
        case .kicked(let reason): "kicked (\(reason))"
        case .sessionTakenOver: "session-taken-over"
        case .mqttProtocol(let detail): "mqtt-protocol (\(detail))"
        }
    }

    /// The line to send before closing, when the protocol has one for this reason.
    var farewell: ProtocolError? {
        switch self {
        case .slowConsumer(let detail): ProtocolError(.slowConsumer, "disconnected: \(detail)")
        case .idleTimeout(let setting): ProtocolError(.idleTimeout, "disconnected: nothing received for \(setting)")
        case .shutdown: ProtocolError(.shuttingDown, "server is shutting down")
        case .authTimeout: ProtocolError(.authRequired, "disconnected: no AUTH within auth_timeout")
        case .authExpired: ProtocolError(.authExpired, "closing")
        case .framingLost: ProtocolError(.syntax, "a BPUB payload must be followed by LF or CRLF; closing")
        case .memoryBound(let detail): ProtocolError(.limit, "disconnected: \(detail)")
        case .userLimit(let detail): ProtocolError(.limit, detail)
        case .kicked(let reason): ProtocolError(.kicked, reason)
        case .quit, .eof, .socketError, .authFailures, .handshakeTimeout, .webSocketClose, .sessionTakenOver,
             .mqttProtocol:
            nil
        }
    }

    /// The level of its "disconnect" log line: info when the server cut the client off or the socket failed,
    /// debug when the client left by itself or the server is stopping.
    var logLevel: Logger.Level {
        switch self {
        case .slowConsumer, .idleTimeout, .socketError, .authTimeout, .authExpired, .handshakeTimeout, .framingLost,
             .memoryBound, .userLimit, .kicked, .sessionTakenOver, .mqttProtocol:
            .info
        // The failed AUTH was logged already, once per interval at most: a guesser must not fill the log here.
        case .quit, .eof, .shutdown, .authFailures, .webSocketClose: .debug
        }
    }

    /// Whether queued output is still worth flushing before the socket closes.
    var flushesOutput: Bool {
        switch self {
        case .socketError, .handshakeTimeout: false
        default: true
        }
    }
}
