/// Base64 (RFC 4648): the standard alphabet with padding for the WebSocket handshake's key and accept value
/// (§4), and the URL-safe alphabet without padding for the tokens `fanoutd --hash-token` makes (§5), which
/// shells, URLs and YAML take as they are.
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard base64, padded with `=` to a multiple of 4 characters.
    public static func encode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: standard, padded: true)
    }

    /// base64url: `-` and `_` instead of `+` and `/`, and no padding.
    public static func encodeURLSafe(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: urlSafe, padded: false)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = 0
            for (offset, byte) in chunk.enumerated() { value |= Int(byte) << (16 - 8 * offset) }
            // n bytes make n + 1 digits; padding fills the group to 4.
            for position in 0...chunk.count { out.append(alphabet[(value >> (18 - 6 * position)) & 63]) }
            if padded { out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 3 - chunk.count)) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil unless `text` is padded standard base64.
    public static func decode(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            var value = 0
            var padding = 0
            for offset in 0..<4 {
                let byte = bytes[index + offset]
                if byte == UInt8(ascii: "=") {
                    guard index + 4 == bytes.count, offset >= 2 else { return nil }
                    padding += 1
                    value <<= 6
                    continue
                }
                guard padding == 0, let digit = standard.firstIndex(of: byte) else { return nil }
                value = value << 6 | digit
            }
            out.append(UInt8((value >> 16) & 0xFF))
            if padding < 2 { out.append(UInt8((value >> 8) & 0xFF)) }
            if padding < 1 { out.append(UInt8(value & 0xFF)) }
            index += 4
        }
        return out
    }
}
