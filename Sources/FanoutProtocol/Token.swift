/// The protocol's opaque tokens (epochs, group names, question ids): 1 to 64 bytes of `[A-Za-z0-9_.-]`.
public enum Token {
    public static let maxLength = 64

    /// Whether `bytes` is a token.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        for byte in bytes where !isTokenByte(byte) { return false }
        return true
    }

    public static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isValid(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
