/// Builds server lines. Every line ends in LF.
public enum Encoder {
    /// `+HELLO fanout/1 <server-name> auth=none|required epoch=<token>`
    public static func greeting(serverName: String, authRequired: Bool, epoch: String) -> String {
        "+HELLO fanout/1 \(serverName) auth=\(authRequired ? "required" : "none") epoch=\(epoch)\n"
    }

    /// `+OK` or `+OK <text>`.
    public static func ok(_ text: String = "") -> String {
        text.isEmpty ? "+OK\n" : "+OK \(text)\n"
    }

    /// Appends `MSG <subject> <seq> <payload>\n` to `buffer` without intermediate strings.
    public static func appendMessage(
        subject: UnsafeRawBufferPointer,
        seq: UInt64,
        payload: UnsafeRawBufferPointer,
        to buffer: inout [UInt8]
    ) {
        buffer.append(contentsOf: messagePrefix)
        buffer.append(contentsOf: subject)
        buffer.append(CommandParser.space)
        appendDecimal(seq, to: &buffer)
        buffer.append(CommandParser.space)
        buffer.append(contentsOf: payload)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends the decimal digits of `value`.
    public static func appendDecimal(_ value: UInt64, to buffer: inout [UInt8]) {
        if value < 10 {
            buffer.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                     UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { raw in
            while remaining > 0 {
                raw[count] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) {
                buffer.append(raw[index])
            }
        }
    }

    private static let messagePrefix: [UInt8] = Array("MSG ".utf8)
}
