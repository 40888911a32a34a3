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

    /// Parses one line without its LF. Nil for a line that fits none of the forms.
    public static func parse(_ line: UnsafeRawBufferPointer) -> ServerLine? {
        guard let first = line.first else { return nil }
        if first == UInt8(ascii: "M") {
            return parseMessage(line)
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

    private static func parseMessage(_ line: UnsafeRawBufferPointer) -> ServerLine? {
        guard let message = MessageLine(line) else { return nil }
        return .message(subject: String(decoding: message.subject, as: UTF8.self), seq: message.seq,
                        payload: Array(message.payload))
    }
}
