/// The subject rules of PROTOCOL.md: 1 to 255 bytes of 0x21...0x7E, `.`-separated non-empty tokens;
/// in patterns, a token that is exactly `*` matches one token and a last token that is exactly `>` matches
/// one or more. Other tokens (even ones containing `*` or `>` among other bytes) are literal.
public enum Subject {
    public static let maxLength = 255

    static let dot = UInt8(ascii: ".")
    static let star = UInt8(ascii: "*")
    static let greater = UInt8(ascii: ">")

    /// Checks a concrete subject (for `PUB`): wildcard tokens are refused.
    public static func validateConcrete(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) {
        let hasWildcard = try validate(bytes)
        if hasWildcard {
            throw ProtocolError(.badSubject, "\(quoted(bytes)): wildcards are only allowed in SUB and UNSUB")
        }
    }

    /// Checks a pattern (for `SUB`/`UNSUB`): `*` tokens anywhere, a `>` token only last.
    public static func validatePattern(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) {
        _ = try validate(bytes)
    }

    /// Validates shape; returns whether any token is a wildcard. Throws for a `>` token that is not last.
    private static func validate(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> Bool {
        guard !bytes.isEmpty else { throw ProtocolError(.badSubject, "empty subject") }
        guard bytes.count <= maxLength else {
            throw ProtocolError(.badSubject, "subject is \(bytes.count) bytes, the limit is \(maxLength)")
        }
        var tokenStart = 0
        var hasWildcard = false
        for index in 0...bytes.count {
            let atEnd = index == bytes.count
            if !atEnd {
                let byte = bytes[index]
                guard byte >= 0x21 && byte <= 0x7E else {
                    throw ProtocolError(.badSubject, "\(quoted(bytes)): only printable ASCII without spaces is allowed")
                }
                if byte != dot { continue }
            }
            let length = index - tokenStart
            guard length > 0 else { throw ProtocolError(.badSubject, "\(quoted(bytes)): empty token") }
            if length == 1 {
                let byte = bytes[tokenStart]
                if byte == star { hasWildcard = true }
                if byte == greater {
                    guard atEnd else {
                        throw ProtocolError(.badSubject, "\(quoted(bytes)): '>' is only allowed as the last token")
                    }
                    hasWildcard = true
                }
            }
            tokenStart = index + 1
        }
        return hasWildcard
    }

    /// Whether a pattern has a wildcard token. The pattern must be valid.
    public static func isWildcard(_ pattern: String) -> Bool {
        pattern.utf8.split(separator: dot).contains { $0.count == 1 && ($0.first == star || $0.first == greater) }
    }

    /// The reference matcher: does `pattern` match the concrete `subject`? Both must be valid.
    /// Linear in their length; the server's index exists so that publishing never loops over patterns.
    public static func matches(pattern: String, subject: String) -> Bool {
        let patternTokens = pattern.utf8.split(separator: dot, omittingEmptySubsequences: false)
        let subjectTokens = subject.utf8.split(separator: dot, omittingEmptySubsequences: false)
        for (index, token) in patternTokens.enumerated() {
            if token.count == 1 && token.first == greater && index == patternTokens.count - 1 {
                return subjectTokens.count > index
            }
            guard index < subjectTokens.count else { return false }
            if token.count == 1 && token.first == star { continue }
            if !token.elementsEqual(subjectTokens[index]) { return false }
        }
        return patternTokens.count == subjectTokens.count
    }

    /// The tokens of a valid subject or pattern.
    public static func tokens(of subject: String) -> [Substring] {
        subject.split(separator: ".", omittingEmptySubsequences: false)
    }

    static func quoted(_ bytes: UnsafeRawBufferPointer) -> String {
        "'\(printable(bytes, limit: 64))'"
    }
}

/// Renders untrusted bytes for an error message: printable ASCII kept, anything else as `?`, capped.
func printable(_ bytes: UnsafeRawBufferPointer, limit: Int) -> String {
    var scalars = String.UnicodeScalarView()
    for byte in bytes.prefix(limit) {
        scalars.append(Unicode.Scalar(byte >= 0x20 && byte <= 0x7E ? byte : UInt8(ascii: "?")))
    }
    return String(scalars) + (bytes.count > limit ? "..." : "")
}

extension Subject {
    /// Whether `pattern` is a valid SUB/UNSUB pattern.
    public static func isValidPattern(_ pattern: String) -> Bool {
        var pattern = pattern
        return pattern.withUTF8 { bytes in
            do {
                try validatePattern(UnsafeRawBufferPointer(bytes))
                return true
            } catch {
                return false
            }
        }
    }
}
