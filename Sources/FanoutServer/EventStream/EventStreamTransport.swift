import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol

/// Server-Sent Events (the HTML Living Standard's text/event-stream) as a transport: protocol lines in from
/// the server, events out. `MSG` lines become events whose data is one JSON object and whose id is the
/// stream's positions; RESUME replies set the positions; `RESET` lines become `reset` events and move them;
/// `-ERR` lines become `error` events; anything else is a comment. Its client has nothing more to say after
/// its request: what it sends is dropped.
final class EventStreamTransport: TransportAdapter {
    let session: EventStreamSession

    init(session: EventStreamSession) {
        self.session = session
    }

    /// Cost: one pass over `lines`, and a JSON string per message. Each stream gets its own events: an
    /// event's id carries that stream's positions, so it differs per stream.
    override func write(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection) {
        guard let socket = connection.socket else { return }
        session.scratch.removeAll(keepingCapacity: session.scratch.capacity <= 4096)
        ServerOutput.forEachUnit(in: lines) { unit in
            switch unit {
            case .line(let line):
                appendEvent(for: line)
            case .binary(let header, let payload, _):
                guard let message = BinaryHeader(header) else { return }
                if let index = session.subjects.firstIndex(of: message.subject) { session.positions[index] = message.seq }
                if let id = session.eventID { session.scratch.append(contentsOf: "id: \(id)\n".utf8) }
                session.scratch.append(contentsOf: Self.binaryEvent(subject: JSONText.quoted(message.subject),
                                                                    seq: message.seq, payload: payload).utf8)
            }
        }
        socket.write(session.scratch)
    }

    /// A message whose payload a line cannot carry: its bytes in base64, as `payload_base64`.
    static func binaryEvent(subject quotedSubject: String, seq: UInt64, payload: UnsafeRawBufferPointer) -> String {
        "data: {\"subject\":\(quotedSubject),\"seq\":\(seq),\"payload_base64\":\"\(Base64.encode(Array(payload)))\"}\n\n"
    }

    /// The subject and seq of a `BMSG <subject> <seq> <length>` header.
    struct BinaryHeader {
        let subject: String
        let seq: UInt64

        init?(_ header: UnsafeRawBufferPointer) {
            let words = header.split(separator: UInt8(ascii: " "))
            guard words.count == 4, let seq = DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: words[2])) else {
                return nil
            }
            subject = String(decoding: words[1], as: UTF8.self)
            self.seq = seq
        }
    }

    /// The farewell as an `error` event.
    override func farewell(_ reason: DisconnectReason, to connection: ClientConnection) -> Bool {
        guard reason.flushesOutput, reason != .eof else { return false }
        if case .slowConsumer = reason { return false }
        if let farewell = reason.farewell { connection.write(farewell.line) }
        return true
    }

    /// A publish run's events are encoded once for all the run's event streams (`RunFraming.events`); each
    /// stream adds only its `id:` lines, since an id carries that stream's positions. Cost per stream: one
    /// copy of the run's event text and an id per message (O(its resumable subjects), at most 16), never a
    /// JSON encoding. A stream with no resumable subject writes the same text as the others: shared when
    /// large, as a TCP run's lines are.
    override func writeRun(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection, socket: BufferedSocket,
                           framing: inout RunFraming) {
        if !framing.eventsEncoded { Self.encodeEvents(of: lines, into: &framing) }
        guard !session.subjects.isEmpty else {
            return RunFraming.write(framing.eventBodies, receivers: framing.receivers,
                                    sharedAs: &framing.sharedEvents, to: socket)
        }
        if session.subjects.count == 1 && session.subjects[0] == framing.subject {
            return writeSingleSubjectRun(to: socket, framing: &framing)
        }
        let index = session.subjects.firstIndex(of: framing.subject)
        session.scratch.removeAll(keepingCapacity: session.scratch.capacity <= 4096)
        framing.eventBodies.withUnsafeBytes { bodies in
            for event in framing.events {
                if let index { session.positions[index] = event.seq }
                if event.isMessage { session.appendEventID(to: &session.scratch) }
                session.scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bodies[event.body]))
            }
        }
        socket.write(session.scratch)
    }

    /// A stream of the run's subject alone: its ids are `<epoch>:<seq>`, the same for every such stream of
    /// that epoch, so the run's text with ids is built once and shared (O(1) per stream per run, plus a
    /// reference or a copy of the text).
    private func writeSingleSubjectRun(to socket: BufferedSocket, framing: inout RunFraming) {
        if framing.idEpoch != session.epoch {
            framing.idEpoch = session.epoch
            framing.sharedEventsWithIDs = nil
            framing.eventsWithIDs.removeAll(keepingCapacity: framing.eventsWithIDs.capacity <= 1 << 20)
            framing.eventBodies.withUnsafeBytes { bodies in
                for event in framing.events {
                    if event.isMessage {
                        framing.eventsWithIDs.append(contentsOf: "id: ".utf8)
                        framing.eventsWithIDs.append(contentsOf: session.epoch.utf8)
                        framing.eventsWithIDs.append(UInt8(ascii: ":"))
                        DecimalDigits.append(event.seq, to: &framing.eventsWithIDs)
                        framing.eventsWithIDs.append(UInt8(ascii: "\n"))
                    }
                    framing.eventsWithIDs.append(contentsOf: UnsafeRawBufferPointer(rebasing: bodies[event.body]))
                }
            }
        }
        if let last = framing.events.last { session.positions[0] = last.seq }
        RunFraming.write(framing.eventsWithIDs, receivers: framing.receivers, sharedAs: &framing.sharedEventsWithIDs,
                         to: socket)
    }

    /// The run's `MSG` and `RESET` lines as event text, once (the same JSON for every stream).
    private static func encodeEvents(of lines: UnsafeRawBufferPointer, into framing: inout RunFraming) {
        framing.eventsEncoded = true
        framing.eventBodies.removeAll(keepingCapacity: framing.eventBodies.capacity <= 1 << 20)
        framing.events.removeAll(keepingCapacity: true)
        let quotedSubject = JSONText.quoted(framing.subject)
        ServerOutput.forEachUnit(in: lines) { unit in
            let bodyStart = framing.eventBodies.count
            guard case .line(let line) = unit else {
                guard case .binary(let header, let payload, _) = unit, let message = BinaryHeader(header) else { return }
                framing.eventBodies.append(contentsOf: binaryEvent(subject: quotedSubject, seq: message.seq,
                                                                   payload: payload).utf8)
                framing.events.append(.init(body: bodyStart..<framing.eventBodies.count, seq: message.seq, isMessage: true))
                return
            }
            if let message = MessageLine(line), !UTF8Validation.isValid(message.payload) {
                // Bytes that are not UTF-8 cannot be a JSON string faithfully: base64, as a BMSG's are.
                framing.eventBodies.append(contentsOf: binaryEvent(subject: quotedSubject, seq: message.seq,
                                                                   payload: message.payload).utf8)
                framing.events.append(.init(body: bodyStart..<framing.eventBodies.count, seq: message.seq, isMessage: true))
            } else if let message = MessageLine(line) {
                let payload = JSONText.quoted(String(decoding: message.payload, as: UTF8.self))
                framing.eventBodies.append(contentsOf: "data: {\"subject\":\(quotedSubject),\"seq\":".utf8)
                DecimalDigits.append(message.seq, to: &framing.eventBodies)
                framing.eventBodies.append(contentsOf: ",\"payload\":\(payload)}\n\n".utf8)
                framing.events.append(.init(body: bodyStart..<framing.eventBodies.count, seq: message.seq, isMessage: true))
            } else if case .reset(let subject, let epoch, let seq, let missed)? = ServerLine.parse(line) {
                framing.eventBodies.append(contentsOf: Self.resetEvent(subject: subject, epoch: epoch, seq: seq, missed: missed).utf8)
                framing.events.append(.init(body: bodyStart..<framing.eventBodies.count, seq: seq, isMessage: false))
            }
        }
    }

    /// `event: reset` with its JSON: the subject's next message follows `seq` under `epoch`.
    private static func resetEvent(subject: String, epoch: String, seq: UInt64, missed: UInt64?) -> String {
        "event: reset\ndata: {\"subject\":\(JSONText.quoted(subject)),\"epoch\":\(JSONText.quoted(epoch)),"
            + "\"seq\":\(seq),\"missed\":\(missed.map(String.init) ?? "null")}\n\n"
    }

    private func appendEvent(for line: UnsafeRawBufferPointer) {
        if let message = MessageLine(line), !UTF8Validation.isValid(message.payload) {
            let subject = String(decoding: message.subject, as: UTF8.self)
            if let index = session.subjects.firstIndex(of: subject) { session.positions[index] = message.seq }
            if let id = session.eventID { session.scratch.append(contentsOf: "id: \(id)\n".utf8) }
            session.scratch.append(contentsOf: Self.binaryEvent(subject: JSONText.quoted(subject), seq: message.seq,
                                                                payload: message.payload).utf8)
            return
        }
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix("MSG ") {
            let parts = text.dropFirst(4).split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, let seq = UInt64(parts[1]) else { return }
            let subject = String(parts[0])
            let payload = parts.count > 2 ? String(parts[2]) : ""
            if let index = session.subjects.firstIndex(of: subject) { session.positions[index] = seq }
            var event = ""
            if let id = session.eventID { event += "id: \(id)\n" }
            event += "data: {\"subject\":\(JSONText.quoted(subject)),\"seq\":\(seq),\"payload\":\(JSONText.quoted(payload))}\n\n"
            session.scratch.append(contentsOf: event.utf8)
        } else if text.hasPrefix("+OK "), text.contains(" epoch="), !session.pendingReplies.isEmpty {
            let index = session.pendingReplies.removeFirst()
            let fields = Self.fields(text.split(separator: " "))
            if let epoch = fields["epoch"] { session.epoch = String(epoch) }
            // Nothing replayed: the stream goes on from where the subject stands. Replayed messages move the
            // position themselves, one by one, so a drop during the replay resumes where it stopped.
            if fields["replayed"] == "0", let seq = fields["seq"].flatMap({ UInt64($0) }) { session.positions[index] = seq }
            if let missed = fields["missed"], missed != "0" {
                let subject = session.subjects[index]
                let count = missed == "unknown" ? "null" : String(missed)
                session.scratch.append(contentsOf: "event: missed\ndata: {\"subject\":\(JSONText.quoted(subject)),\"missed\":\(count)}\n\n".utf8)
            }
            Self.appendComment(text, to: &session.scratch)
        } else if case .reset(let subject, let epoch, let seq, let missed)? = ServerLine.parse(line) {
            // The subject's numbering restarted, or messages were lost: the position moves to where the next
            // message follows.
            if let index = session.subjects.firstIndex(of: subject) { session.positions[index] = seq }
            session.scratch.append(contentsOf: Self.resetEvent(subject: subject, epoch: epoch, seq: seq, missed: missed).utf8)
        } else if text.hasPrefix("-ERR ") {
            let words = text.split(separator: " ", maxSplits: 2)
            let code = words.count > 1 ? String(words[1]) : "error"
            let message = words.count > 2 ? String(words[2]) : ""
            session.scratch.append(contentsOf: "event: error\ndata: \(HTTPRefusal.errorJSON(code: code, message))\n\n".utf8)
        } else if !text.isEmpty {
            Self.appendComment(text, to: &session.scratch)
        }
    }

    /// `: <text>` as one comment line. CR, LF and NUL are written as `\r`, `\n` and `\0`: in an event stream a
    /// CR alone ends a line, so a raw one would let text a client chose (a payload inside a pushed line) start
    /// lines of its own, `data:` included, and forge events.
    static func appendComment(_ text: String, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: ": ".utf8)
        for byte in text.utf8 {
            switch byte {
            case 0x0D: buffer.append(contentsOf: "\\r".utf8)
            case 0x0A: buffer.append(contentsOf: "\\n".utf8)
            case 0x00: buffer.append(contentsOf: "\\0".utf8)
            default: buffer.append(byte)
            }
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    /// The `key=value` words of a line.
    private static func fields(_ words: some Sequence<Substring>) -> [Substring: Substring] {
        var fields: [Substring: Substring] = [:]
        for word in words {
            let pair = word.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        return fields
    }
}
