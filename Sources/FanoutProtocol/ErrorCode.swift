/// The `<code>` word of a `-ERR <code> <text>` line. A struct with static codes: the set grows with the protocol.
public struct ErrorCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// The verb is not one the server knows.
    public static let unknownCommand = ErrorCode("unknown-command")
    /// The verb is known but its arguments are wrong.
    public static let syntax = ErrorCode("syntax")
    /// A subject or pattern breaks the subject rules.
    public static let badSubject = ErrorCode("bad-subject")
    /// The line is longer than `max_line`.
    public static let tooLong = ErrorCode("too-long")
    /// The connection's credentials do not allow this.
    public static let denied = ErrorCode("denied")
    /// A configured limit (subscriptions, connections) is reached.
    public static let limit = ErrorCode("limit")
    /// The server needs `AUTH` before this verb.
    public static let authRequired = ErrorCode("auth-required")
    /// Sent before closing a connection whose output is not being read fast enough.
    public static let slowConsumer = ErrorCode("slow-consumer")
    /// Sent before closing connections when the server stops.
    public static let shuttingDown = ErrorCode("shutting-down")
    /// The engine shared by several nodes cannot take the command now (a Redis shard is down or too busy), or
    /// lost it with its outcome unknown; the text says which. Nothing is disconnected for it.
    public static let unavailable = ErrorCode("unavailable")
    /// Sent before closing a connection that sent nothing for `idle_timeout`.
    public static let idleTimeout = ErrorCode("idle-timeout")
    /// The connection's application token (JWT) expired: pushed once when it does, and again before the close
    /// unless an `AUTH` with a fresh token came within the grace. Never the reply to a command.
    public static let authExpired = ErrorCode("auth-expired")
    /// Sent before closing a connection that an administrator's `KICK` named (1.3), with the reason given.
    public static let kicked = ErrorCode("kicked")
}

/// A failure answered as one `-ERR <code> <text>` line.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    /// Human text: one line, no newline.
    public let text: String

    public init(_ code: ErrorCode, _ text: String) {
        self.code = code
        self.text = text
    }

    /// The wire form, newline included.
    public var line: String { "-ERR \(code) \(text)\n" }

    public var description: String { "\(code) \(text)" }
}

extension ProtocolError {
    private static let revokedPrefix = "revoked: no longer allowed to subscribe to "

    /// The notice a server sends when a reload takes subscriptions away, naming them. It is the one
    /// `-ERR denied` that answers no command, so clients must recognise it (`revokedPatterns`).
    public static func revoked(_ patterns: [String]) -> ProtocolError {
        ProtocolError(.denied, revokedPrefix + patterns.joined(separator: " "))
    }

    /// The patterns a revocation notice names, or nil when this error is not one.
    public var revokedPatterns: [String]? {
        guard code == .denied, text.hasPrefix(Self.revokedPrefix) else { return nil }
        return text.dropFirst(Self.revokedPrefix.count).split(separator: " ").map(String.init)
    }
}
