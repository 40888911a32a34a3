/// A frame's opcode (RFC 6455 §5.2) and the close codes this server sends (§7.4.1).
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes of payload, never fragmented.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// The close codes the server sends (RFC 6455 §7.4.1).
public enum WebSocketCloseCode {
    /// The client asked to close (QUIT, or its own close frame).
    public static let normal: UInt16 = 1000
    /// The server is stopping, or the connection sat idle.
    public static let goingAway: UInt16 = 1001
    /// A frame broke the framing rules: unmasked, reserved bits, unknown opcode, bad control frame.
    public static let protocolError: UInt16 = 1002
    /// A binary frame: the protocol is text lines.
    public static let unsupportedData: UInt16 = 1003
    /// A text message that is not UTF-8.
    public static let invalidPayload: UInt16 = 1007
    /// A policy stop: failed AUTH, no AUTH in time, a slow consumer.
    public static let policyViolation: UInt16 = 1008
    /// A text message longer than the decoder's limit (`WebSocketDecoder.maxMessage`).
    public static let messageTooBig: UInt16 = 1009
}
