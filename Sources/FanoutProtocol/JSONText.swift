/// JSON string escaping: the one implementation for the HTTP front's JSON bodies and events, and for the
/// `fanout` CLI's JSON output, so that both write the same text for the same string.
public enum JSONText {
    /// `text` as a JSON string literal, quotes included.
    ///
    /// Escapes what RFC 8259 requires (`"`, `\`, U+0000 to U+001F) and also U+007F (DEL), which JSON allows
    /// raw: it is a control character that terminals and logs mishandle, and a message payload may carry it.
    /// Everything else, non-ASCII included, passes through as UTF-8.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
