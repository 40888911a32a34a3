import FanoutProtocol

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
    /// Nothing received for `idle_timeout`.
    case idleTimeout
    /// The server is stopping.
    case shutdown
    /// No successful AUTH within auth_timeout.
    case authTimeout
    /// Too many failed AUTH attempts.
    case authFailures

    var description: String {
        switch self {
        case .quit: "quit"
        case .eof: "eof"
        case .socketError(let detail): detail
        case .slowConsumer(let detail): "slow-consumer (\(detail))"
        case .idleTimeout: "idle-timeout"
        case .shutdown: "shutdown"
        case .authTimeout: "auth-timeout"
        case .authFailures: "auth-failures"
        }
    }

    /// The line to send before closing, when the protocol has one for this reason.
    var farewell: ProtocolError? {
        switch self {
        case .slowConsumer(let detail): ProtocolError(.slowConsumer, "disconnected: \(detail)")
        case .idleTimeout: ProtocolError(.idleTimeout, "disconnected: nothing received for idle_timeout")
        case .shutdown: ProtocolError(.shuttingDown, "server is shutting down")
        case .authTimeout: ProtocolError(.authRequired, "disconnected: no AUTH within auth_timeout")
        case .quit, .eof, .socketError, .authFailures: nil
        }
    }

    /// Whether queued output is still worth flushing before the socket closes.
    var flushesOutput: Bool {
        if case .socketError = self { return false }
        return true
    }
}
