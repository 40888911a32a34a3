import FanoutEventLoop
import FanoutHTTP

/// The WebSocket transport of a client connection: frames in, lines to the command dispatch; lines out,
/// one text frame each. Everything else (commands, limits, backpressure, slow consumers) is the TCP path's.
extension ClientConnection {
    /// Queues `lines` (LF-ended protocol lines) as one text frame per line.
    func writeFramed(_ lines: UnsafeRawBufferPointer) {
        guard let socket, let session = webSocketSession, !session.closeSent else { return }
        session.scratch.removeAll(keepingCapacity: session.scratch.capacity <= 4096)
        WebSocketEncoder.appendTextFrames(lines: lines, to: &session.scratch)
        socket.write(session.scratch)
    }

    /// Queues a close frame; nothing is framed after it.
    func writeClose(code: UInt16, reason: String = "") {
        guard let socket, let session = webSocketSession, !session.closeSent else { return }
        socket.write(WebSocketEncoder.closeFrame(code: code, reason: reason))
        session.closeSent = true
    }

    /// `readCommands` for a WebSocket: each text message's lines go to the dispatch in order, pings are
    /// answered, a close is answered and ends the connection, and a framing failure closes with its code.
    /// The same turn, pause and backpressure rules as TCP, applied between messages: a message's lines are
    /// executed together, except that lines after one that stops reading (QUIT, a failed AUTH's pause) are
    /// dropped, where TCP would keep them for later. One line per frame, the protocol's rule for WebSocket,
    /// never meets that case. Cost per message: its lines, at most max_line + 2 bytes of them.
    func readFrames() {
        guard isReading, let socket, let session = webSocketSession else { return }
        let pauseBytes = server.configuration.limits.readPauseBytes
        let maxLine = server.configuration.limits.maxLine
        let started = ContinuousClock.now
        var lines = 0
        var turnIsOver = false
        var ending: DisconnectReason?
        socket.readAvailable()
        socket.readInput { chunk in
            guard ending == nil else { return chunk.count }
            server.stats.bytesIn += UInt64(chunk.count)
            return session.decoder.feed(chunk) { event in
                switch event {
                case .text(let message):
                    Self.forEachLine(of: message) { line in
                        guard isReading else { return }
                        if line.count > maxLine { server.lineTooLong(from: self) } else { server.execute(line, from: self) }
                        lines &+= 1
                    }
                case .ping(let payload):
                    var frame: [UInt8] = []
                    WebSocketEncoder.appendFrame(.pong, payload: payload, to: &frame)
                    socket.write(frame)
                case .pong:
                    break
                case .close(let code):
                    ending = .webSocketClose(code: code == nil ? WebSocketCloseCode.normal : code!, reason: "closed by the client")
                    return false
                case .failure(let code, let reason):
                    ending = .webSocketClose(code: code, reason: reason)
                    return false
                case .tooLong:
                    // The decoder's limit is max_line plus a line end (see WebSocketSession).
                    ending = .webSocketClose(code: WebSocketCloseCode.messageTooBig,
                                             reason: "message exceeds max_line=\(maxLine) bytes and a line end")
                    return false
                }
                guard isReading else { return false }
                if socket.outputCount >= pauseBytes {
                    pauseReading(pauseBytes: pauseBytes)
                    return false
                }
                if lines & 63 == 0 && ContinuousClock.now - started > Server.turn {
                    turnIsOver = true
                    return false
                }
                return true
            }
        }
        server.finishRuns()
        if let ending { return server.disconnect(self, reason: ending) }
        if turnIsOver { server.continueLater(self) }
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

    /// Queues what a client on an adapted transport is told when the server lets it go. A WebSocket gets the
    /// protocol's farewell line as a text frame, then a close frame with the code for the reason; an event
    /// stream gets the farewell as an `error` event. Returns false when nothing is worth flushing: a slow
    /// consumer's backlog cannot be cut at a frame or event boundary, so it is dropped unflushed.
    func writeAdaptedFarewell(_ reason: DisconnectReason) -> Bool {
        if transport == .eventStream {
            guard reason.flushesOutput, reason != .eof else { return false }
            if case .slowConsumer = reason { return false }
            if let farewell = reason.farewell { write(farewell.line) }
            return true
        }
        switch reason {
        case .slowConsumer, .eof:
            return false
        case .webSocketClose(let code, let text):
            writeClose(code: code, reason: text)
        case .quit:
            writeClose(code: WebSocketCloseCode.normal)
        case .shutdown, .idleTimeout:
            if let farewell = reason.farewell { write(farewell.line) }
            writeClose(code: WebSocketCloseCode.goingAway, reason: reason.description)
        case .authTimeout, .authFailures:
            if let farewell = reason.farewell { write(farewell.line) }
            writeClose(code: WebSocketCloseCode.policyViolation, reason: reason.description)
        case .socketError, .handshakeTimeout:
            return false
        }
        return true
    }
}
