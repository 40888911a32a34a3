import FanoutProtocol

/// The words of `KICK` (protocol 1.3), checked before anything is sent like every other word (`CommandWords`).
/// Whether a client named exists, and the `<id>` grammar, are the server's to judge: here only what would
/// split the line or end it is refused.
extension CommandWords {
    /// A client as `CLIENTS` and `WHO` show it (`7`, `n1/7`) or `user=<user>`: one word of visible bytes.
    public static func checkKickTarget(_ client: String) throws(ClientError) {
        let grammar = "an id as CLIENTS shows it, or user=<user>"
        guard !client.isEmpty else { throw .invalid("bad client: empty; give \(grammar)") }
        for byte in client.utf8 where byte <= 0x20 || byte == 0x7F {
            throw .invalid("bad client '\(shownWord(client))': a client is one word, \(grammar)")
        }
    }

    /// A `KICK` reason: text without control bytes, at most `Command.kickReasonMaximum` (256) bytes, since the
    /// server sends it on to the kicked connection. One that starts or ends with a space would not arrive as given.
    public static func checkKickReason(_ reason: String) throws(ClientError) {
        guard !reason.isEmpty, reason.first != " ", reason.last != " " else {
            throw .invalid("bad kick reason: empty, or with a space at an end")
        }
        guard reason.utf8.count <= Command.kickReasonMaximum else {
            throw .invalid("bad kick reason: \(reason.utf8.count) bytes; at most \(Command.kickReasonMaximum)")
        }
        if reason.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .invalid("bad kick reason: it holds a control byte (a line feed, tab or other)")
        }
    }

    private static func shownWord(_ word: String) -> String {
        let shown = word.utf8.count > 64 ? String(word.prefix(64)) + "..." : word
        return String(decoding: shown.utf8.map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
    }
}
