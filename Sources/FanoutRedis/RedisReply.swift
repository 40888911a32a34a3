import CHiredis

/// One reply from Redis, copied out of hiredis's reply object (which hiredis frees after the callback).
public enum RedisReply: Equatable, Sendable {
    case string([UInt8])
    case status(String)
    case error(String)
    case integer(Int64)
    case null
    case array([RedisReply])

    /// Copies `reply`. A nil reply (hiredis's sign of a dropped connection) is `nil`.
    init?(_ reply: UnsafeMutableRawPointer?) {
        guard let reply else { return nil }
        self.init(copying: reply.assumingMemoryBound(to: redisReply.self))
    }

    private init(copying pointer: UnsafeMutablePointer<redisReply>) {
        let reply = pointer.pointee
        switch reply.type {
        case REDIS_REPLY_STRING:
            self = .string(Self.bytes(reply))
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(reply.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(reply.elements)
            for index in 0..<reply.elements {
                if let element = reply.element[index] { elements.append(RedisReply(copying: element)) }
            }
            self = .array(elements)
        default:
            self = .null
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let text = reply.str, reply.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: text, count: reply.len))
    }

    /// The bytes of a string or status reply.
    public var bytes: [UInt8]? {
        switch self {
        case .string(let bytes): bytes
        case .status(let text): Array(text.utf8)
        default: nil
        }
    }

    /// The reply as text, for strings and statuses.
    public var text: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    /// An integer reply, or a string that holds one.
    public var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .string(let bytes): Int64(String(decoding: bytes, as: UTF8.self))
        default: nil
        }
    }

    public var elements: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }
}

/// Why a command got no reply.
public enum RedisFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The shard is not connected, or has too many commands in flight: the command was not sent.
    case unavailable(String)
    /// The connection dropped after the command was sent: Redis may or may not have run it.
    case outcomeUnknown(String)

    public var description: String {
        switch self {
        case .unavailable(let text): text
        case .outcomeUnknown(let text): "outcome unknown: \(text)"
        }
    }
}
