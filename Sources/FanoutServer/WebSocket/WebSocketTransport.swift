import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol

/// The WebSocket transport (RFC 6455 over the HTTP listener): frames in, each message's commands read as TCP
/// reads its stream (`WebSocketCommands.swift`); lines out, one text frame each, and bytes a text frame cannot
/// carry in binary frames. Everything else (commands, limits, backpressure, slow consumers)
/// is the line protocol's.
final class WebSocketTransport: TransportAdapter {
    var decoder: WebSocketDecoder
    /// Reused for framing replies: one frame per line.
    private var scratch: [UInt8] = []
    /// Whether our close frame has been queued: nothing is framed after it.
    private var closeSent = false
    /// How the client ended the connection, or how its framing failed: acted on after the read.
    private var ending: DisconnectReason?
    /// The rest of a message whose reading stopped inside it (a command closed the gate, the output reached
    /// the pause mark, the turn was over): at most one message, max_line + max_payload + 4 bytes, counted
    /// toward max_memory with the decoder's buffer (`settleHeldBytes`).
    var held: [UInt8] = []

    init(maxLine: Int, maxPayload: Int) {
        // A message is one or more lines; a line of max_line bytes may come with its CRLF.
        decoder = WebSocketDecoder(maxMessage: maxLine + 2)
        // A binary message holds commands as a text one does, with room for one BPUB whole: its header line,
        // its bytes and their line end. A longer one is refused whole, with one -ERR too-long.
        decoder.maxBinaryMessage = maxLine + 2 + maxPayload + 2
    }

    /// Each message's commands go to the dispatch in order (`run`, the same rule for text and binary
    /// messages), pings are answered, a close is answered and ends the connection, and a framing failure closes
    /// with its code. The turn and pause rules apply between commands, as on TCP: when reading stops inside a
    /// message, the rest of it is held (`held`) and run before any later input. Cost per message: linear in it.
    ///
    /// A turn is bounded between frames as it is between lines: a message of many small frames calls no
    /// handler until its end, so the chunk goes to the decoder a slice at a time and the clock is read after
    /// each slice; past `Server.turn` the rest waits for the next loop pass.
    override func consume(_ chunk: UnsafeRawBufferPointer, for connection: ClientConnection, turn: inout ReadTurn) -> Int {
        guard ending == nil, let socket = connection.socket else { return chunk.count }
        guard !turn.isOver else { return 0 }
        var consumed = 0
        var goesOn = true
        let server = connection.server
        defer { settleHeldBytes(of: connection) }
        while consumed < chunk.count {
            let slice = UnsafeRawBufferPointer(rebasing: chunk[consumed..<min(chunk.count, consumed + Self.slice)])
            consumed += decoder.feed(slice, admit: { server.memory.reservePayload($0, for: connection) }) { event in
                goesOn = handle(event, of: connection, turn: &turn, socket: socket)
                return goesOn
            }
            if ending != nil { return chunk.count }
            guard goesOn else { return consumed }
            if ContinuousClock.now - turn.started > Server.turn {
                turn.isOver = true
                return consumed
            }
        }
        return consumed
    }

    /// Bytes decoded between two readings of the clock: a few microseconds of frames.
    private static let slice = 4096

    /// Acts on one decoded event; false to stop reading.
    private func handle(_ event: WebSocketDecoder.Event, of connection: ClientConnection, turn: inout ReadTurn,
                        socket: BufferedSocket) -> Bool {
        switch event {
        case .text(let message), .binary(let message):
            return run(message, of: connection, turn: &turn, socket: socket)
        case .binaryTooLong:
            // Over max_payload: its bytes went as they came, and the connection goes on (BPUB's rule).
            let maxPayload = connection.server.configuration.limits.maxPayload
            let reason = "binary message exceeds max_payload=\(maxPayload) bytes and its header"
            refuseBinary(ProtocolError(.tooLong, reason), of: connection, turn: &turn)
        case .binaryRefused:
            // Past max_memory: the message's frames are read and dropped, and the connection goes on, as a BPUB
            // header refused on TCP.
            let maxMemory = connection.server.configuration.limits.maxMemory
            let reason = "the server is at max_memory=\(maxMemory): this binary message cannot be held now"
            refuseBinary(ProtocolError(.limit, reason), of: connection, turn: &turn)
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
            let maxLine = connection.server.configuration.limits.maxLine
            ending = .webSocketClose(code: WebSocketCloseCode.messageTooBig,
                                     reason: "message exceeds max_line=\(maxLine) bytes and a line end")
            return false
        }
        return connection.goesOn(after: &turn, countingLine: false, socket: socket)
    }

    /// Answers a binary message that is not run with its refusal, after the replies to the commands before it;
    /// the refusal counts as a line of the turn.
    private func refuseBinary(_ error: ProtocolError, of connection: ClientConnection, turn: inout ReadTurn) {
        connection.server.fanout.close()
        connection.send(error.line)
        turn.lines &+= 1
    }

    /// The rest of a message whose reading stopped: run before any new input.
    override func consumeHeld(for connection: ClientConnection, turn: inout ReadTurn) -> Bool {
        guard !held.isEmpty, let socket = connection.socket else { return true }
        let message = held
        held = []
        defer { settleHeldBytes(of: connection) }
        return message.withUnsafeBytes { run($0, of: connection, turn: &turn, socket: socket) }
    }

    /// Bytes of unfinished messages count toward max_memory by the one per-connection count a BPUB's payload
    /// uses on TCP: the decoder asks for its buffer's growth as a frame's header announces it
    /// (`MemoryGuard.reservePayload`, `admittedBytes`), what it and `held` no longer hold is given back, and what
    /// has arrived is what the bound's drops weigh (`MemoryGuard.noteReceived`). After each feed; O(1).
    private func settleHeldBytes(of connection: ClientConnection) {
        let server = connection.server
        guard server.memory.holdsPayload(of: connection) else { return }
        server.memory.settlePayload(decoder.admittedBytes + held.count, of: connection)
        server.memory.noteReceived(decoder.bufferedCount + held.count, by: connection)
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
        case .slowConsumer, .eof, .socketError, .handshakeTimeout, .framingLost, .sessionTakenOver, .mqttProtocol:
            return false
        case .webSocketClose(let code, let text):
            close(connection, code: code, reason: text)
        case .quit:
            close(connection, code: WebSocketCloseCode.normal)
        case .shutdown, .idleTimeout, .memoryBound:
            if let farewell = reason.farewell { connection.write(farewell.line) }
            close(connection, code: WebSocketCloseCode.goingAway, reason: reason.description)
        case .authTimeout, .authFailures, .authExpired:
            if let farewell = reason.farewell { connection.write(farewell.line) }
            close(connection, code: WebSocketCloseCode.policyViolation, reason: reason.description)
        case .userLimit:
            // The reason names the user, and a close frame's reason must fit 123 bytes: the line says it all.
            if let farewell = reason.farewell { connection.write(farewell.line) }
            close(connection, code: WebSocketCloseCode.policyViolation, reason: "user-limit")
        case .kicked:
            // The administrator's reason may pass a close frame's 123 bytes: the line carries it.
            if let farewell = reason.farewell { connection.write(farewell.line) }
            close(connection, code: WebSocketCloseCode.policyViolation, reason: "kicked")
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
    /// not goes as the `BMSG` push of the same message, in a binary frame, and any other such line (an `ASK` or
    /// `ANSWER` push, a `PONG` echoing such bytes) goes in a binary frame as TCP carries it, its LF included,
    /// never altered.
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
                    // Any bytes are any bytes on every transport: the line goes exact, as TCP has it.
                    WebSocketEncoder.appendFrame(.binary, payload: Array(line) + [0x0A], to: &out)
                }
            case .binary(_, _, let whole):
                WebSocketEncoder.appendFrame(.binary, payload: whole, to: &out)
            }
        }
    }
}
