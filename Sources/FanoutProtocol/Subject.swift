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
        // A byte loop rather than a split: SUB calls this for every new pattern, and a split allocates.
        var tokenLength = 0
        var tokenByte: UInt8 = 0
        for byte in pattern.utf8 {
            if byte == dot {
                if tokenLength == 1 && (tokenByte == star || tokenByte == greater) { return true }
                tokenLength = 0
            } else {
                tokenLength += 1
                tokenByte = byte
            }
        }
        return tokenLength == 1 && (tokenByte == star || tokenByte == greater)
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
    /// Most tokens a wildcard pattern (one with a `*` or `>` token) may have; concrete subjects have no such
    /// limit. With `maxStarTokens` it bounds the server's wildcard index: matching a subject visits at most
    /// Σ_{d=0...16} Σ_{k=0...3} C(d, k) = 3,213 index nodes, however many patterns are stored.
    public static let maxWildcardPatternTokens = 16
    /// Most `*` tokens a pattern may have (see `maxWildcardPatternTokens`).
    public static let maxStarTokens = 3

    /// Why a valid pattern breaks the wildcard limits, or nil when it keeps them (or has no wildcard).
    /// The server checks this on SUB only: UNSUB of any valid pattern stays a harmless no-op.
    public static func wildcardPatternProblem(_ pattern: String) -> String? {
        var tokens = 0
        var stars = 0
        var wildcard = false
        var tokenLength = 0
        var tokenByte: UInt8 = 0
        func endToken() {
            tokens += 1
            if tokenLength == 1 && tokenByte == star { stars += 1 }
            if tokenLength == 1 && (tokenByte == star || tokenByte == greater) { wildcard = true }
            tokenLength = 0
        }
        for byte in pattern.utf8 {
            if byte == dot {
                endToken()
            } else {
                tokenLength += 1
                tokenByte = byte
            }
        }
        endToken()
        guard wildcard else { return nil }
        let shown = "'\(pattern.prefix(64))\(pattern.utf8.count > 64 ? "..." : "")'"
        if tokens > maxWildcardPatternTokens {
            return "\(shown): a wildcard pattern may have at most \(maxWildcardPatternTokens) tokens, " +
                "this one has \(tokens)"
        }
        if stars > maxStarTokens {
            return "\(shown): a pattern may have at most \(maxStarTokens) '*' tokens, this one has \(stars)"
        }
        return nil
    }

    /// Throws `-ERR limit` when `pattern` breaks the wildcard limits (`wildcardPatternProblem`).
    public static func checkWildcardLimits(_ pattern: String) throws(ProtocolError) {
        if let problem = wildcardPatternProblem(pattern) { throw ProtocolError(.limit, problem) }
    }

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
