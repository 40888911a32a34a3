@_spi(Bench) import FanoutEventLoop

/// A subscriber that reaches fanoutd over WebSocket (`/ws` on its HTTP listener): the opening handshake,
/// the greeting, AUTH and SUB as masked text frames, until it hands its connection to a `DeliverySink`,
/// which then counts `MSG` frames. Runs on the benchmark's loop thread.
public final class WebSocketPeer: HTTPBenchPeer, BenchPeer {
    private var handshakeDone = false
    /// What the next server text frame answers: the greeting, AUTH or SUB.
    private var expecting: Expectation = .greeting

    private enum Expectation { case greeting, auth, reply, nothing }

    override public init(loop: EventLoop, address: SocketAddress, token: String?) {
        super.init(loop: loop, address: address, token: token)
    }

    public var wireFormat: WireFormat { .webSocket }

    override public func socketDidConnect(_ socket: BufferedSocket) {
        // The key only has to be 16 bytes of base64; the server's accept value is not checked here.
        socket.write("GET /ws HTTP/1.1\r\nHost: \(address)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                     "Sec-WebSocket-Key: ZmFub3V0LWJlbmNoLWtleQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    }

    public func subscribe(_ subject: String, _ done: @escaping (String?) -> Void) {
        pending = done
        expecting = .reply
        send("SUB \(subject)")
    }

    override public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        expecting = .nothing
        return super.releaseConnection()
    }

    override public func socketDidRead(_ socket: BufferedSocket) {
        var input: [UInt8] = []
        socket.readInput { chunk in
            input.append(contentsOf: chunk)
            return chunk.count
        }
        var used = 0
        if !handshakeDone {
            guard let end = Self.endOfHead(input) else { return unread(input, socket) }
            let head = String(decoding: input[..<end], as: UTF8.self)
            guard head.hasPrefix("HTTP/1.1 101") else { return finish("upgrade refused: \(head.prefix(80))") }
            handshakeDone = true
            used = end + 4
        }
        // Server frames are unmasked; only the few frames before the sink takes over are read here.
        while expecting != .nothing, input.count - used >= 2 {
            if input[used + 1] & 0x7F == 127 { return finish("a frame over 64 KiB during setup") }
            guard let (offset, length) = input.withUnsafeBytes({ ServerFrame.header($0, at: used) }),
                  input.count >= offset + length else { break }
            let text = String(decoding: input[offset..<offset + length], as: UTF8.self)
            used = offset + length
            reply(text)
        }
        unread(Array(input[used...]), socket)
    }

    /// Puts back what was not consumed, for the next read or for the sink.
    private func unread(_ bytes: [UInt8], _ socket: BufferedSocket) {
        socket.prependInput(bytes)
    }

    private func reply(_ text: String) {
        switch expecting {
        case .greeting:
            guard text.hasPrefix("+HELLO") else { return finish("bad greeting: \(text)") }
            if let token {
                expecting = .auth
                send("AUTH \(token)")
            } else {
                expecting = .nothing
                finish(nil)
            }
        case .auth, .reply:
            if text.hasPrefix("MSG ") { return }
            expecting = .nothing
            finish(text.hasPrefix("+OK") ? nil : text)
        case .nothing:
            break
        }
    }

    /// One masked text frame (RFC 6455 §5.3: clients mask everything they send).
    private func send(_ line: String) {
        let payload = Array(line.utf8)
        let mask: [UInt8] = [0x5A, 0x17, 0xC3, 0x2E]
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        frame += mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index & 3]) }
        socket?.write(frame)
    }

    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
