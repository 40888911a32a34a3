/// A line from the server, as a client reads it.
public enum ServerLine: Equatable, Sendable {
    /// `+HELLO fanout/1 <name> auth=...` with its key=value fields.
    case hello(serverName: String, fields: [String: String])
    /// `+<word> ...`: a success reply (`+OK ...`, `+PONG ...`); `text` is what follows the first word.
    case success(word: String, text: String)
    /// `-ERR <code> <text>`.
    case failure(ProtocolError)
    /// `MSG <subject> <seq> <payload>`.
    case message(subject: String, seq: UInt64, payload: [UInt8])
    /// `RESET <subject> epoch=<e> seq=<s> missed=<m|unknown>` (several nodes): the subject's next message is
    /// `s + 1` under epoch `e`; `missed` is nil when unknown.
    case reset(subject: String, epoch: String, seq: UInt64, missed: UInt64?)
    /// `BMSG <subject> <seq> <length>` (1.2): the header of a message whose `length` payload bytes follow it,
    /// then LF. The reader asks its framer for those bytes next.
    case binaryMessage(subject: String, seq: UInt64, length: Int)
    /// `ASK <subject> <id> <payload>` (1.2): a question put to this connection.
    case question(subject: String, id: String, payload: [UInt8])
    /// `ANSWER <id> <responder> <payload>` (1.2): an answer to a question this connection asked.
    case answer(id: String, responder: String, payload: [UInt8])
    /// `DONE <id> asked=<a> answered=<b> gone=<g>` (1.2): a question this connection asked has closed.
    case done(id: String, asked: Int, answered: Int, gone: Int)

    /// Parses one line without its LF. Nil for a line that fits none of the forms.
    public static func parse(_ line: UnsafeRawBufferPointer) -> ServerLine? {
        guard let first = line.first else { return nil }
        switch first {
        case UInt8(ascii: "M"): return parseMessage(line)
        case UInt8(ascii: "B"): return parseBinaryHeader(line)
        case UInt8(ascii: "A"): return parseQuestionOrAnswer(line)
        default: break
        }
        let text = String(decoding: line, as: UTF8.self)
        if first == UInt8(ascii: "+") {
            let body = text.dropFirst()
            let word = body.prefix { $0 != " " }
            let rest = body.dropFirst(word.count).drop { $0 == " " }
            if word == "HELLO" {
                let parts = rest.split(separator: " ")
                guard parts.count >= 2, parts[0].hasPrefix("fanout/") else { return nil }
                var fields: [String: String] = [:]
                for part in parts.dropFirst(2) {
                    let pair = part.split(separator: "=", maxSplits: 1)
                    if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
                }
                return .hello(serverName: String(parts[1]), fields: fields)
            }
            return .success(word: String(word), text: String(rest))
        }
        if text.hasPrefix("RESET ") {
            return parseReset(text)
        }
        if text.hasPrefix("DONE ") {
            return parseDone(text)
        }
        if text.hasPrefix("-ERR ") {
            let body = text.dropFirst(5)
            let code = body.prefix { $0 != " " }
            let rest = body.dropFirst(code.count).drop { $0 == " " }
            return .failure(ProtocolError(ErrorCode(String(code)), String(rest)))
        }
        return nil
    }

    public static func parse(_ line: String) -> ServerLine? {
        var line = line
        return line.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    private static func parseReset(_ text: String) -> ServerLine? {
        let words = text.split(separator: " ")
        guard words.count == 5 else { return nil }
        var fields: [Substring: Substring] = [:]
        for word in words.dropFirst(2) {
            let pair = word.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return nil }
            fields[pair[0]] = pair[1]
        }
        guard let epoch = fields["epoch"], let seq = fields["seq"].flatMap({ UInt64($0) }),
              let missed = fields["missed"] else { return nil }
        let count = UInt64(missed)
        guard count != nil || missed == "unknown" else { return nil }
        return .reset(subject: String(words[1]), epoch: String(epoch), seq: seq, missed: count)
    }

    private static func parseDone(_ text: String) -> ServerLine? {
        let words = text.split(separator: " ")
        guard words.count >= 5 else { return nil }
        var fields: [Substring: Int] = [:]
        // Fields this client does not know are ignored, as in the greeting.
        for word in words.dropFirst(2) {
            let pair = word.split(separator: "=", maxSplits: 1)
            if pair.count == 2, let value = Int(pair[1]), value >= 0 { fields[pair[0]] = value }
        }
        guard let asked = fields["asked"], let answered = fields["answered"], let gone = fields["gone"] else {
            return nil
        }
        return .done(id: String(words[1]), asked: asked, answered: answered, gone: gone)
    }

    private static func parseBinaryHeader(_ line: UnsafeRawBufferPointer) -> ServerLine? {
        guard let header = BinaryMessageHeader(line) else { return nil }
        return .binaryMessage(subject: String(decoding: header.subject, as: UTF8.self), seq: header.seq,
                              length: header.length)
    }

    /// `ASK <subject> <id> <payload>` and `ANSWER <id> <responder> <payload>`: two words after the verb, then
    /// the payload, every byte after the one space that follows the second word (possibly none).
    private static func parseQuestionOrAnswer(_ line: UnsafeRawBufferPointer) -> ServerLine? {
        let isQuestion: Bool
        if line.starts(with: "ASK ".utf8) {
            isQuestion = true
        } else if line.starts(with: "ANSWER ".utf8) {
            isQuestion = false
        } else {
            return nil
        }
        guard let (words, payload) = PushWords.split(line, words: 3) else { return nil }
        let first = String(decoding: words[1], as: UTF8.self), second = String(decoding: words[2], as: UTF8.self)
        return isQuestion ? .question(subject: first, id: second, payload: Array(payload))
            : .answer(id: first, responder: second, payload: Array(payload))
    }

    private static func parseMessage(_ line: UnsafeRawBufferPointer) -> ServerLine? {
        guard let message = MessageLine(line) else { return nil }
        return .message(subject: String(decoding: message.subject, as: UTF8.self), seq: message.seq,
                        payload: Array(message.payload))
    }
}
