/// The header of a WebSocket frame a server sends (unmasked, RFC 6455 section 5.2), read by the load generator's
/// peers: its 7-bit, 16-bit or 64-bit payload length.
enum ServerFrame {
    /// Where the payload of the frame at `position` starts and how long it is, or nil while its header is not
    /// all in `bytes`.
    @inline(__always)
    static func header(_ bytes: UnsafeRawBufferPointer, at position: Int) -> (start: Int, length: Int)? {
        guard bytes.count - position >= 2 else { return nil }
        let code = Int(bytes[position + 1] & 0x7F)
        switch code {
        case 126:
            guard bytes.count - position >= 4 else { return nil }
            return (position + 4, Int(bytes[position + 2]) << 8 | Int(bytes[position + 3]))
        case 127:
            guard bytes.count - position >= 10 else { return nil }
            var length = 0
            for index in 2..<10 { length = length << 8 | Int(bytes[position + index]) }
            return (position + 10, length)
        default:
            return (position + 2, code)
        }
    }
}
