import FanoutProtocol

/// The checks on every word the client puts on a command line, made before anything is sent: a word the
/// server would split, or read as a line end, would otherwise publish to another subject or send a second
/// command (`publish("a\nPUB b", ...)`), after which every reply goes to the wrong caller. The grammar is the
/// server's own (`Subject`, `Token` in FanoutProtocol), so the client refuses exactly what the server would.
/// Each check throws `ClientError.invalid` with a one-line reason that names the word.
public enum CommandWords {
    /// A concrete subject, for `PUB`, `BPUB`, `ASK`, `RESUME` and `LAST`: no wildcard tokens.
    public static func checkSubject(_ subject: String) throws(ClientError) {
        var subject = subject
        let problem: ProtocolError? = subject.withUTF8 { bytes in
            do throws(ProtocolError) {
                try Subject.validateConcrete(UnsafeRawBufferPointer(bytes))
                return nil
            } catch {
                return error
            }
        }
        if let problem { throw .invalid("bad subject: \(problem.text)") }
    }

    /// A pattern, for `SUB`, `UNSUB` and `QSUB`: `*` tokens anywhere, `>` only last.
    public static func checkPattern(_ pattern: String) throws(ClientError) {
        var pattern = pattern
        let problem: ProtocolError? = pattern.withUTF8 { bytes in
            do throws(ProtocolError) {
                try Subject.validatePattern(UnsafeRawBufferPointer(bytes))
                return nil
            } catch {
                return error
            }
        }
        if let problem { throw .invalid("bad subject pattern: \(problem.text)") }
    }

    public static func checkPatterns(_ patterns: [String]) throws(ClientError) {
        for pattern in patterns { try checkPattern(pattern) }
    }

    /// A group name (`QSUB`): a protocol token, 1 to 64 bytes of `[A-Za-z0-9_.-]`.
    public static func checkGroup(_ group: String) throws(ClientError) {
        try checkToken(group, "group name")
    }

    /// A question id (`ANSWER`): a protocol token.
    public static func checkQuestionID(_ id: String) throws(ClientError) {
        try checkToken(id, "question id")
    }

    /// An epoch (`RESUME`), as the server sends it in its greeting and replies: a protocol token.
    public static func checkEpoch(_ epoch: String) throws(ClientError) {
        try checkToken(epoch, "epoch")
    }

    /// An `AUTH` token: one word of visible bytes. Its content is the server's to judge (a password, a JWT), so
    /// only what would split the line or end it is refused: empty, a space, a tab, CR, LF or another control byte.
    public static func checkAuthToken(_ token: String) throws(ClientError) {
        guard !token.isEmpty else { throw .invalid("bad token: empty") }
        for byte in token.utf8 where byte <= 0x20 || byte == 0x7F {
            throw .invalid("bad token: it holds \(describe(byte)); a token is one word of visible characters")
        }
    }

    /// A whole command line given by the caller (`request`): it must be one line, so no LF and no CR.
    public static func checkLine(_ line: String) throws(ClientError) {
        for byte in line.utf8 where byte == 0x0A || byte == 0x0D {
            throw .invalid("bad command line: it holds \(describe(byte)), which would end it early")
        }
        // BPUB's bytes follow its line: sent as a plain line, the server would take the next commands as them.
        let verb = line.utf8.drop { $0 == 0x20 || $0 == 0x09 }.prefix { $0 != 0x20 && $0 != 0x09 }
        if verb.count == 4, String(decoding: verb, as: UTF8.self).uppercased() == "BPUB" {
            throw .invalid("bad command line: BPUB carries bytes after its line; use publishBinary")
        }
    }

    private static func checkToken(_ word: String, _ what: String) throws(ClientError) {
        guard !Token.isValid(word) else { return }
        let shown = word.utf8.count > 64 ? String(word.prefix(64)) + "..." : word
        throw .invalid(
            "bad \(what) '\(printableText(shown))': a \(what) is 1 to \(Token.maxLength) bytes of [A-Za-z0-9_.-]")
    }

    private static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x20: "a space"
        case 0x09: "a tab"
        case 0x0A: "a line feed"
        case 0x0D: "a carriage return"
        default: "a control byte"
        }
    }

    /// The word as an error message shows it: control bytes as `?`, so that the message stays one line.
    private static func printableText(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
    }
}

extension ClientError {
    /// Runs `check` and gives back its error, for the methods that report through a completion.
    static func refusal(_ check: () throws(ClientError) -> Void) -> ClientError? {
        do throws(ClientError) {
            try check()
            return nil
        } catch {
            return error
        }
    }
}
