@_spi(Bench) import FanoutEventLoop
import FanoutProtocol

/// A peer speaking Redis pub/sub over RESP (SUBSCRIBE, PUBLISH), so that the same scenario can be run
/// against a redis-server. A subscription waits for the `subscribe` push that confirms it.
public final class RedisPeer: ServerPeer, BenchPeer {
    private var reader = RESPReader()
    private var scratch: [UInt8] = []

    public init(loop: EventLoop, address: SocketAddress) {
        super.init(loop: loop, address: address, name: "redis")
    }

    public func subscribe(_ subject: String, _ done: @escaping (String?) -> Void) {
        subscribeWaiters.append(done)
        scratch.removeAll(keepingCapacity: true)
        RESP.appendArrayHeader(2, to: &scratch)
        RESP.appendBulk("SUBSCRIBE", to: &scratch)
        RESP.appendBulk(subject, to: &scratch)
        socket?.write(scratch)
    }

    public var wireFormat: WireFormat { .redis }

    public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        releasePeerSocket(&socket, unread: reader.unconsumed)
    }

    override public func socketDidConnect(_ socket: BufferedSocket) {
        socket.disableNagle()
        connectDone?(nil)
        connectDone = nil
    }

    override public func socketDidRead(_ socket: BufferedSocket) {
        socket.readInput { chunk in
            reader.append(chunk)
            return chunk.count
        }
        reader.drain { value in
            switch value {
            case .push(let kind):
                // Deliveries are counted by a DeliverySink once the subscription is confirmed, never here.
                if kind != .message && !subscribeWaiters.isEmpty {
                    subscribeWaiters.removeFirst()(nil)
                }
            case .error(let text):
                onFailure?("redis error: \(text)")
            case .integer, .other:
                // Publishes are acknowledged to a PublishPump, never here.
                break
            }
        }
    }
}

/// Just enough RESP (the Redis protocol) to encode SUBSCRIBE and the prefix of a PUBLISH frame.
enum RESP {
    static func appendArrayHeader(_ count: Int, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "*"))
        DecimalDigits.append(UInt64(count), to: &buffer)
        buffer.append(contentsOf: [0x0D, 0x0A])
    }

    static func appendBulk(_ text: String, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "$"))
        DecimalDigits.append(UInt64(text.utf8.count), to: &buffer)
        buffer.append(contentsOf: [0x0D, 0x0A])
        buffer.append(contentsOf: text.utf8)
        buffer.append(contentsOf: [0x0D, 0x0A])
    }
}

/// An incremental reader of the RESP values a pub/sub client receives.
struct RESPReader {
    enum PushKind { case message, subscribe, other }

    enum Value {
        case integer(Int)
        /// A push array, by its first element (`message`, `subscribe`, ...).
        case push(PushKind)
        case error(String)
        case other
    }

    private var buffer: [UInt8] = []
    private var start = 0

    /// Bytes appended and not yet drained as complete values.
    var unconsumed: [UInt8] { Array(buffer[start...]) }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 1 << 20 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Hands every complete value to `body`, keeping an incomplete tail for the next `append`.
    mutating func drain(_ body: (Value) -> Void) {
        var position = start
        buffer.withUnsafeBytes { raw in
            while position < raw.count, let value = Self.parse(raw, &position) { body(value) }
        }
        start = position
    }

    /// The CRLF-ended line at `position`, advancing past it; nil when incomplete.
    private static func line(_ raw: UnsafeRawBufferPointer, _ position: inout Int) -> Range<Int>? {
        var index = position
        while index + 1 < raw.count {
            if raw[index] == 0x0D && raw[index + 1] == 0x0A {
                defer { position = index + 2 }
                return position..<index
            }
            index += 1
        }
        return nil
    }

    /// A RESP length or integer: digits, or `-1` for null.
    private static func number(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int {
        let negative = range.first.map { raw[$0] == UInt8(ascii: "-") } ?? false
        let digits = UnsafeRawBufferPointer(rebasing: raw[(negative ? range.dropFirst() : range[...])])
        let value = Int(clamping: DecimalDigits.parse(digits) ?? 0)
        return negative ? -value : value
    }

    private enum Element { case bytes(Range<Int>), null, incomplete }

    /// One array element: a bulk string (or an integer, read as null).
    private static func element(_ raw: UnsafeRawBufferPointer, _ position: inout Int) -> Element {
        guard position < raw.count else { return .incomplete }
        let type = raw[position]
        var cursor = position + 1
        guard let header = line(raw, &cursor) else { return .incomplete }
        guard type == UInt8(ascii: "$") else {
            position = cursor
            return .null
        }
        let length = number(raw, header)
        guard length >= 0 else {
            position = cursor
            return .null
        }
        guard cursor + length + 2 <= raw.count else { return .incomplete }
        position = cursor + length + 2
        return .bytes(cursor..<(cursor + length))
    }

    private static func parse(_ raw: UnsafeRawBufferPointer, _ position: inout Int) -> Value? {
        let type = raw[position]
        var cursor = position + 1
        guard let header = line(raw, &cursor) else { return nil }
        switch type {
        case UInt8(ascii: ":"):
            position = cursor
            return .integer(number(raw, header))
        case UInt8(ascii: "-"):
            position = cursor
            return .error(String(decoding: UnsafeRawBufferPointer(rebasing: raw[header]), as: UTF8.self))
        case UInt8(ascii: "*"):
            let count = number(raw, header)
            var kind: Range<Int>?
            for index in 0..<max(count, 0) {
                switch element(raw, &cursor) {
                case .incomplete: return nil
                case .null: break
                case .bytes(let range):
                    if index == 0 { kind = range }
                }
            }
            position = cursor
            guard let kind else { return .other }
            let word = UnsafeRawBufferPointer(rebasing: raw[kind])
            if word.elementsEqual("message".utf8) { return .push(.message) }
            return .push(word.elementsEqual("subscribe".utf8) ? .subscribe : .other)
        default:
            position = cursor
            return .other
        }
    }
}
