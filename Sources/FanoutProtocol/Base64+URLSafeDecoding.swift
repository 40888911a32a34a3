extension Base64 {
    /// Each byte's value as a base64url digit, or 0xFF.
    private static let urlSafeDigits: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        for (value, byte) in alphabet.utf8.enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        return table
    }()

    /// Whether `byte` is a digit of the base64url alphabet.
    public static func isURLSafeDigit(_ byte: UInt8) -> Bool {
        urlSafeDigits[Int(byte)] != 0xFF
    }

    /// Nil unless `text` is canonical unpadded base64url (RFC 4648 §5), as JWS (RFC 7515 §2) writes it: no `=`,
    /// no whitespace, no length of 1 mod 4, and the unused low bits of the last digit zero. The last rule makes
    /// the encoding of given bytes unique, so a changed character always changes the bytes (a token whose
    /// signature's spare bits were flipped must not verify).
    public static func decodeURLSafe(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3 + 2)
        let table = urlSafeDigits
        var value: UInt32 = 0
        var digits = 0
        for byte in text {
            let digit = table[Int(byte)]
            guard digit != 0xFF else { return nil }
            value = value << 6 | UInt32(digit)
            digits += 1
            if digits == 4 {
                out.append(UInt8(truncatingIfNeeded: value >> 16))
                out.append(UInt8(truncatingIfNeeded: value >> 8))
                out.append(UInt8(truncatingIfNeeded: value))
                value = 0
                digits = 0
            }
        }
        switch digits {
        case 2:
            // 12 bits carry one byte; the low 4 must be zero.
            guard value & 0x0F == 0 else { return nil }
            out.append(UInt8(truncatingIfNeeded: value >> 4))
        case 3:
            // 18 bits carry two bytes; the low 2 must be zero.
            guard value & 0x03 == 0 else { return nil }
            out.append(UInt8(truncatingIfNeeded: value >> 10))
            out.append(UInt8(truncatingIfNeeded: value >> 2))
        default:
            break
        }
        return out
    }

    /// `decodeURLSafe` of a string's UTF-8.
    public static func decodeURLSafe(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decodeURLSafe(UnsafeRawBufferPointer($0)) }
    }
}
