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
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                guard lead != 0 else { throw .malformed("MQTT-1.5.3-2", "\(field) contains U+0000") }
                index += 1
                continue
            }
            // The second byte's allowed range depends on the lead byte (Unicode's table 3-7): this is what
            // excludes overlong forms, surrogates (ED A0..BF) and code points over U+10FFFF.
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: throw .malformed("MQTT-1.5.3-1", "\(field) is not well-formed UTF-8")
            }
            guard index + length <= count else {
                throw .malformed("MQTT-1.5.3-1", "\(field) ends inside a UTF-8 sequence")
            }
            let second = bytes[index + 1]
            guard second >= low && second <= high else {
                throw .malformed("MQTT-1.5.3-1", "\(field) is not well-formed UTF-8")
            }
            for continuation in (index + 2)..<(index + length) where bytes[continuation] & 0xC0 != 0x80 {
                throw .malformed("MQTT-1.5.3-1", "\(field) is not well-formed UTF-8")
            }
            index += length
        }
    }

    /// `validate` for a Swift string's bytes (a String is well-formed already; this checks U+0000).
    public static func isValid(_ text: String) -> Bool {
        var copy = text
        return copy.withUTF8 { bytes in
            (try? validate(UnsafeRawBufferPointer(bytes), field: "text")) != nil
        }
    }
}
