import FanoutProtocol

/// A cursor over one packet's variable header and payload: the standard's field encodings (two-byte
/// integers, length-prefixed UTF-8 strings and binary data, section 1.5) with its string rules applied.
struct MQTTBodyReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte(_ field: String) throws(MQTTDecodeError) -> UInt8 {
        guard offset < bytes.count else { throw .malformed("MQTT-2.2.3", "the packet ends inside its \(field)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16(_ field: String) throws(MQTTDecodeError) -> UInt16 {
        guard remaining >= 2 else { throw .malformed("MQTT-2.2.3", "the packet ends inside its \(field)") }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// A packet identifier, which must not be 0 (MQTT-2.3.1-1).
    mutating func packetID() throws(MQTTDecodeError) -> UInt16 {
        let id = try uint16("packet identifier")
        guard id != 0 else { throw .malformed("MQTT-2.3.1-1", "packet identifier 0") }
        return id
    }

    /// Length-prefixed bytes (binary data, section 1.5.3's prefix).
    mutating func binary(_ field: String) throws(MQTTDecodeError) -> UnsafeRawBufferPointer {
        let length = Int(try uint16("\(field)'s length"))
        guard remaining >= length else {
            throw .malformed("MQTT-1.5.3", "\(field) announces \(length) bytes, \(remaining) remain in the packet")
        }
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
    }

    /// A length-prefixed UTF-8 string checked by `MQTTText.validate`.
    mutating func string(_ field: String) throws(MQTTDecodeError) -> String {
        let raw = try binary(field)
        try MQTTText.validate(raw, field: field)
        return String(decoding: raw, as: UTF8.self)
    }

    /// The bytes left in the packet (PUBLISH's payload).
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
    }
}

/// The standard's rules for UTF-8 encoded strings (section 1.5.3).
public enum MQTTText {
    /// Throws unless `bytes` is well-formed UTF-8 (no overlong forms, no surrogates: MQTT-1.5.3-1) without
    /// U+0000 (MQTT-1.5.3-2). The other control characters are allowed, as the standard allows them.
    public static func validate(_ bytes: UnsafeRawBufferPointer, field: String) throws(MQTTDecodeError) {
        guard UTF8Validation.isValid(bytes) else {
            throw .malformed("MQTT-1.5.3-1", "\(field) is not well-formed UTF-8")
        }
        // A zero byte is U+0000 and nothing else in well-formed UTF-8.
        guard !bytes.contains(0) else { throw .malformed("MQTT-1.5.3-2", "\(field) contains U+0000") }
    }

    /// `validate` for a Swift string's bytes (a String is well-formed already; this checks U+0000).
    public static func isValid(_ text: String) -> Bool {
        var copy = text
        return copy.withUTF8 { bytes in
            (try? validate(UnsafeRawBufferPointer(bytes), field: "text")) != nil
        }
    }
}
