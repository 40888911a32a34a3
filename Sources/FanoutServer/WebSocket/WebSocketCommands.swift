import FanoutEventLoop
import FanoutProtocol

/// How a WebSocket message's bytes become commands, one rule for text and binary messages alike: they are read
/// as TCP reads its stream, by the connection's own `LineFramer` (lines; after a `BPUB` header, its bytes and
/// their line end), and the message's end closes what is open at that point. So every command gets exactly
/// one reply, as on TCP, however many a message holds and however its frames are cut.
///
/// At the message's end: an unfinished line is a line (the frame delimits, so its LF may be left off); a
/// `BPUB` whose bytes are all in is published, its line end forgiven; a `BPUB` still missing bytes is refused
/// with `-ERR syntax` (one reply; a header that was refused already, its bytes dropped, gets none more). No
/// command spans two messages. A `BPUB` whose bytes are followed by anything but a line end is `-ERR syntax`,
/// and the rest of its message, which can no longer be read as commands, goes with it: TCP closes the
/// connection there, while here the message's end gives the framing back.
extension WebSocketTransport {
    /// Runs the commands of `message` (or of the rest of one, held since reading stopped in it); false when
    /// reading stopped before the end, the rest then held for `consumeHeld`. Cost: linear in the message.
    func run(_ message: UnsafeRawBufferPointer, of connection: ClientConnection, turn: inout ReadTurn,
             socket: BufferedSocket) -> Bool {
        var dropRest = false
        let consumed = feed(message, of: connection, turn: &turn, socket: socket, dropRest: &dropRest)
        if dropRest {
            connection.framer = LineFramer(maxLine: connection.framer.maxLine)
            return connection.gate.isOpen
        }
        if consumed < message.count {
            if !connection.gate.isClosed { held = Array(UnsafeRawBufferPointer(rebasing: message[consumed...])) }
            return false
        }
        return endMessage(of: connection, turn: &turn, socket: socket)
    }

    /// The message's end: ends an unfinished line, then a BPUB whose bytes are all in; refuses one that is
    /// still missing bytes. The framer is between commands afterwards.
    private func endMessage(of connection: ClientConnection, turn: inout ReadTurn, socket: BufferedSocket) -> Bool {
        let lineEnd: [UInt8] = [0x0A]
        var dropRest = false
        // An unfinished line (or the skipped rest of a long one) ends; a BPUB header there opens its payload.
        if !connection.framer.isInsidePayload {
            _ = lineEnd.withUnsafeBytes { feed($0, of: connection, turn: &turn, socket: socket, dropRest: &dropRest) }
        }
        // A BPUB whose bytes are all in needs no line end of its own.
        if connection.gate.isOpen && connection.framer.awaitsPayloadEnd {
            _ = lineEnd.withUnsafeBytes { feed($0, of: connection, turn: &turn, socket: socket, dropRest: &dropRest) }
        }
        if connection.framer.isInsidePayload {
            if connection.extras?.binarySubject != nil { Self.refuseBinary(connection) }
            connection.framer = LineFramer(maxLine: connection.framer.maxLine)
        }
        return connection.goesOn(after: &turn, countingLine: false, socket: socket)
    }

    /// Feeds bytes of a message to the connection's framer, executing what it finds; returns the bytes consumed
    /// (fewer when reading stopped). `dropRest` is set when a BPUB's bytes end badly.
    private func feed(_ bytes: UnsafeRawBufferPointer, of connection: ClientConnection, turn: inout ReadTurn,
                      socket: BufferedSocket, dropRest: inout Bool) -> Int {
        let server = connection.server
        return connection.framer.feed(bytes) { event in
            switch event {
            case .line(let line):
                // A BPUB header: its bytes are read (or dropped) next, as on TCP.
                let next = server.execute(line, from: connection)
                if case .goOn = next {} else { return next }
            case .tooLong:
                server.lineTooLong(from: connection)
            case .payload(let payload):
                server.publishBinary(payload, from: connection)
            case .badPayloadEnd:
                if connection.extras?.binarySubject != nil { Self.refuseBinary(connection) }
                dropRest = true
                return .stop
            }
            return connection.goesOn(after: &turn, countingLine: true, socket: socket) ? .goOn : .stop
        }
    }

    static func refuseBinary(_ connection: ClientConnection) {
        connection.extras?.binarySubject = nil
        connection.server.fanout.close()
        let reason = "BPUB's bytes and their line end must end within its WebSocket message"
        connection.send(ProtocolError(.syntax, reason).line)
    }
}
