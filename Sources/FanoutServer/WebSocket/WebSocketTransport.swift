import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The WebSocket transport (RFC 6455 over the HTTP listener): frames in, protocol lines out of each text
/// message; lines out, one text frame each. Everything else (commands, limits, backpressure, slow consumers)
/// is the line protocol's.
final class WebSocketTransport: TransportAdapter {
    var decoder: WebSocketDecoder
    /// Reused for framing replies: one frame per line.
    private var scratch: [UInt8] = []
    /// Whether our close frame has been queued: nothing is framed after it.
    private var closeSent = false
    /// How the client ended the connection, or how its framing failed: acted on after the read.
    private var ending: DisconnectReason?

    init(maxLine: Int, maxPayload: Int) {
        // A message is one or more lines; a line of max_line bytes may come with its CRLF.
        decoder = WebSocketDecoder(maxMessage: maxLine + 2)
        // A binary message is one BPUB: its header line, its bytes and their line end.
        decoder.maxBinaryMessage = maxLine + 2 + maxPayload + 2
    }

    /// Each text message's lines go to the dispatch in order, pings are answered, a close is answered and ends
    /// the connection, and a framing failure closes with its code. The turn and pause rules apply between
    /// messages: a message's lines are executed together, except that lines after one that stops reading
    /// (QUIT, a failed AUTH's pause) are dropped, where TCP would keep them for later. One line per frame, the
    /// protocol's rule for WebSocket, never meets that case. Cost per message: its lines, at most
    /// max_line + 2 bytes of them.
    override func consume(_ chunk: UnsafeRawBufferPointer, for connection: ClientConnection, turn: inout ReadTurn) -> Int {
        guard ending == nil, let socket = connection.socket else { return chunk.count }
        let maxLine = connection.server.configuration.limits.maxLine
        return decoder.feed(chunk) { event in
            switch event {
            case .text(let message):
                Self.forEachLine(of: message) { line in
                    guard connection.gate.isOpen else { return }
                    if line.count > maxLine {
                        connection.server.lineTooLong(from: connection)
                    } else {
                        connection.server.execute(line, from: connection)
                    }
                    turn.lines &+= 1
                }
            case .binary(let message):
                guard connection.gate.isOpen else { break }
                Self.executeBinary(message, from: connection)
                turn.lines &+= 1
            case .binaryTooLong:
                // Over max_payload: its bytes went as they came, and the connection goes on (BPUB's rule).
                connection.server.fanout.close()
                connection.send(ProtocolError(.tooLong,
                    "binary message exceeds max_payload=\(connection.server.configuration.limits.maxPayload) bytes and its header").line)
                turn.lines &+= 1
            case .ping(let payload):
                var frame: [UInt8] = []
                WebSocketEncoder.appendFrame(.pong, payload: payload, to: &frame)
                socket.write(frame)
            case .pong:
                break
            case .close(let code):
                ending = .webSocketClose(code: code ?? WebSocketCloseCode.normal, reason: "closed by the client")
                return false
            case .failure(let code, let reason):
                ending = .webSocketClose(code: code, reason: reason)
                return false
            case .tooLong:
                // The decoder's limit is max_line plus a line end (see `init`).
                ending = .webSocketClose(code: WebSocketCloseCode.messageTooBig,
                                         reason: "message exceeds max_line=\(maxLine) bytes and a line end")
                return false
            }
            return connection.goesOn(after: &turn, countingLine: false, socket: socket)
        }
    }

    override func finishRead(of connection: ClientConnection) {
        guard let ending else { return }
        self.ending = nil
        connection.server.disconnect(connection, reason: ending)
    }

    override func write(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection) {
        guard let socket = connection.socket, !closeSent else { return }
        scratch.removeAll(keepingCapacity: scratch.capacity <= 4096)
        Self.appendFrames(pushes: lines, to: &scratch)
        socket.write(scratch)
    }

    /// The run's lines are framed once (one text frame per `MSG` line), and the same bytes shared by every
    /// WebSocket receiver, as TCP receivers share the unframed lines.
    override func writeRun(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection, socket: BufferedSocket,
                           framing: inout RunFraming) {
        guard !closeSent else { return }
        if !framing.webSocketFramed {
            framing.webSocketFramed = true
            framing.webSocketFrames.removeAll(keepingCapacity: true)
            Self.appendFrames(pushes: lines, to: &framing.webSocketFrames)
        }
        RunFraming.write(framing.webSocketFrames, receivers: framing.receivers, sharedAs: &framing.sharedFrames,
                         to: socket)
    }

    /// The protocol's farewell line as a text frame, then a close frame with the code for the reason.
    override func farewell(_ reason: DisconnectReason, to connection: ClientConnection) -> Bool {
        switch reason {
        case .slowConsumer, .eof, .socketError, .handshakeTimeout, .framingLost:
            return false
        case .webSocketClose(let code, let text):
            close(connection, code: code, reason: text)
        case .quit:
            close(connection, code: WebSocketCloseCode.normal)
        case .shutdown, .idleTimeout:
            if let farewell = reason.farewell { connection.write(farewell.line) }
            close(connection, code: WebSocketCloseCode.goingAway, reason: reason.description)
        case .authTimeout, .authFailures:
            if let farewell = reason.farewell { connection.write(farewell.line) }
            close(connection, code: WebSocketCloseCode.policyViolation, reason: reason.description)
        }
        return true
    }

    /// Queues a close frame; nothing is framed after it.
    private func close(_ connection: ClientConnection, code: UInt16, reason: String = "") {
        guard let socket = connection.socket, !closeSent else { return }
        socket.write(WebSocketEncoder.closeFrame(code: code, reason: reason))
        closeSent = true
    }

    /// Frames server output: a text frame per line, and a binary frame per `BMSG` push (header, LF, bytes, LF),
    /// since its bytes may hold anything. A text frame must be UTF-8 (RFC 6455 §8.1): a `MSG` whose payload is
    /// not goes as the `BMSG` push of the same message, in a binary frame, and any other such line (a `PONG`
    /// echoing such bytes) has them replaced by U+FFFD.
    static func appendFrames(pushes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        ServerOutput.forEachUnit(in: pushes) { unit in
            switch unit {
            case .line(let line) where UTF8Validation.isValid(line):
                WebSocketEncoder.appendFrame(.text, payload: line, to: &out)
            case .line(let line):
                if let message = MessageLine(line) {
                    var push: [UInt8] = []
                    Encoder.appendPush(subject: message.subject, seq: message.seq, payload: message.payload, maxLine: 0,
                                       to: &push)
                    WebSocketEncoder.appendFrame(.binary, payload: push, to: &out)
                } else {
                    WebSocketEncoder.appendFrame(.text, payload: Array(String(decoding: line, as: UTF8.self).utf8), to: &out)
                }
            case .binary(_, _, let whole):
                WebSocketEncoder.appendFrame(.binary, payload: whole, to: &out)
            }
        }
    }

    /// A binary message is one `BPUB` command whole: its header line, the announced bytes, LF or CRLF. The
    /// header goes through the dispatch as any line; an accepted one publishes the bytes. A message whose bytes
    /// do not match its header is `-ERR syntax`; the WebSocket's own framing is intact, so it stays open.
    static func executeBinary(_ message: UnsafeRawBufferPointer, from connection: ClientConnection) {
        let server = connection.server
        guard let base = message.baseAddress,
              let newline = memchr(base, 0x0A, message.count).map({ base.distance(to: UnsafeRawPointer($0)) }) else {
            return server.execute(message, from: connection) == .goOn ? () : refuseBinary(connection)
        }
        var headerEnd = newline
        if headerEnd > 0 && message[headerEnd - 1] == 0x0D { headerEnd -= 1 }
        let next = server.execute(UnsafeRawBufferPointer(start: base, count: headerEnd), from: connection)
        guard case .readPayload(let length) = next else { return }
        // The bytes, then LF or CRLF (a missing line end at the frame's end is forgiven: the frame delimits).
        let start = newline + 1
        let rest = message.count - start
        let ending = UnsafeRawBufferPointer(rebasing: message[min(message.count, start + length)...])
        let endsWell = rest >= length && (ending.isEmpty || ending.elementsEqual([0x0A]) || ending.elementsEqual([0x0D, 0x0A]))
        guard endsWell else { return refuseBinary(connection) }
        server.publishBinary(UnsafeRawBufferPointer(start: base + start, count: length), from: connection)
    }

    private static func refuseBinary(_ connection: ClientConnection) {
        connection.extras?.binarySubject = nil
        connection.server.fanout.close()
        connection.send(ProtocolError(.syntax, "a binary message must be one BPUB: header, LF, its bytes, LF").line)
    }

    /// Calls `body` with each line of a text message (LF-separated; CR before LF and a last LF dropped).
    static func forEachLine(of message: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard let base = message.baseAddress else { return body(message) }
        var start = 0
        while true {
            var end = start
            while end < message.count && base.load(fromByteOffset: end, as: UInt8.self) != 0x0A { end += 1 }
            var lineEnd = end
            if lineEnd > start && base.load(fromByteOffset: lineEnd - 1, as: UInt8.self) == 0x0D { lineEnd -= 1 }
            if end < message.count || end > start { body(UnsafeRawBufferPointer(start: base + start, count: lineEnd - start)) }
            start = end + 1
            if start >= message.count { return }
        }
    }
}
