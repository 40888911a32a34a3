/// Turns one line (framing already done) into a `Command`, or the `ProtocolError` to answer.
///
/// Pure and allocation-light: `PUB`, the hot verb, is parsed without copying the subject or payload.
public enum CommandParser {
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")

    /// Parses a line without its LF (and CR). Returns nil for an empty line, which gets no reply.
    public static func parse(_ line: UnsafeRawBufferPointer) throws(ProtocolError) -> Command? {
        var cursor = skipSeparators(line, from: 0)
        guard cursor < line.count else { return nil }
        let verbStart = cursor
        cursor = wordEnd(line, from: cursor)
        let verbBytes = UnsafeRawBufferPointer(rebasing: line[verbStart..<cursor])
        guard let verb = Command.Verb(matching: verbBytes) else {
            throw ProtocolError(.unknownCommand, "'\(printable(verbBytes, limit: 32))' (try HELP)")
        }

        switch verb {
        case .pub:
            return try parsePub(line, after: cursor)
        case .sub:
            let patterns = try words(line, after: cursor).map { word throws(ProtocolError) in try pattern(word) }
            guard !patterns.isEmpty else { throw ProtocolError(.syntax, "SUB needs at least one subject") }
            return .sub(patterns)
        case .unsub:
            return .unsub(try words(line, after: cursor).map { word throws(ProtocolError) in try pattern(word) })
        case .ping:
            let textStart = skipSeparators(line, from: cursor)
            return .ping(UnsafeRawBufferPointer(rebasing: line[textStart...]))
        case .quit, .help, .info, .clients:
            guard skipSeparators(line, from: cursor) == line.count else {
                throw ProtocolError(.syntax, "\(verb.name) takes no arguments")
            }
            switch verb {
            case .quit: return .quit
            case .help: return .help
            case .info: return .info
            default: return .clients
            }
        case .channels:
            let arguments = words(line, after: cursor)
            guard arguments.count <= 1 else { throw ProtocolError(.syntax, "CHANNELS takes at most one pattern") }
            return .channels(filter: try arguments.first.map { word throws(ProtocolError) in try pattern(word) })
        case .resume:
            let arguments = words(line, after: cursor)
            guard arguments.count == 1 || arguments.count == 3 else {
                throw ProtocolError(.syntax, "RESUME takes a subject, optionally followed by an epoch and a seq")
            }
            let subject = try concreteSubject(arguments[0])
            guard arguments.count == 3 else { return .resume(subject: subject, from: nil) }
            guard let after = DecimalDigits.parse(arguments[2]) else {
                throw ProtocolError(.syntax, "RESUME's seq must be unsigned decimal digits that fit in 64 bits")
            }
            return .resume(subject: subject, from: Command.Position(
                epoch: String(decoding: arguments[1], as: UTF8.self), afterSeq: after))
        case .last:
            let arguments = words(line, after: cursor)
            guard arguments.count == 1 || arguments.count == 2 else {
                throw ProtocolError(.syntax, "LAST takes a subject and optionally a count")
            }
            let subject = try concreteSubject(arguments[0])
            guard arguments.count == 2 else { return .last(subject: subject, count: 1) }
            guard let count = DecimalDigits.parse(arguments[1]) else {
                throw ProtocolError(.syntax, "LAST's count must be unsigned decimal digits that fit in 64 bits")
            }
            return .last(subject: subject, count: count)
        case .qsub:
            let arguments = words(line, after: cursor)
            guard arguments.count >= 2 else { throw ProtocolError(.syntax, "QSUB needs a group and at least one subject") }
            guard Token.isValid(arguments[0]) else {
                throw ProtocolError(.syntax, "a group is 1 to 64 bytes of [A-Za-z0-9_.-]")
            }
            let patterns = try arguments.dropFirst().map { word throws(ProtocolError) in try pattern(word) }
            return .qsub(group: String(decoding: arguments[0], as: UTF8.self), patterns: patterns)
        case .ask:
            return try parseAsk(line, after: cursor)
        case .answer:
            let idStart = skipSeparators(line, from: cursor)
            let idEnd = wordEnd(line, from: idStart)
            let id = UnsafeRawBufferPointer(rebasing: line[idStart..<idEnd])
            guard !id.isEmpty else { throw ProtocolError(.syntax, "ANSWER needs a question id and a payload") }
            guard Token.isValid(id) else {
                throw ProtocolError(.syntax, "a question id is 1 to 64 bytes of [A-Za-z0-9_.-]")
            }
            let payloadStart = min(idEnd + 1, line.count)
            return .answer(id: id, payload: UnsafeRawBufferPointer(rebasing: line[payloadStart...]))
        case .bpub:
            let arguments = words(line, after: cursor)
            guard arguments.count == 2 else { throw ProtocolError(.syntax, "BPUB takes a subject and a length") }
            guard let length = DecimalDigits.parse(arguments[1]) else {
                throw ProtocolError(.syntax, "BPUB's length must be unsigned decimal digits that fit in 64 bits")
            }
            return .bpub(subject: arguments[0], length: length)
        case .auth:
            let arguments = words(line, after: cursor)
            guard arguments.count == 1 else { throw ProtocolError(.syntax, "AUTH takes exactly one token") }
            return .auth(token: String(decoding: arguments[0], as: UTF8.self))
        case .who:
            let arguments = words(line, after: cursor)
            guard arguments.count == 1 || arguments.count == 2 else {
                throw ProtocolError(.syntax, "WHO takes a subject and optionally a limit")
            }
            let subject = try concreteSubject(arguments[0])
            guard arguments.count == 2 else { return .who(subject: subject, limit: Command.whoListDefault) }
            guard let limit = DecimalDigits.parse(arguments[1]) else {
                throw ProtocolError(.syntax, "WHO's limit must be unsigned decimal digits that fit in 64 bits")
            }
            return .who(subject: subject, limit: Int(min(limit, UInt64(Command.whoListMaximum))))
        case .kick:
            return try parseKick(line, after: cursor)
        }
    }

    /// `KICK <client> [<reason>]`: the client is `<id>`, `<node>/<id>` or `user=<user>`; the reason is the rest of
    /// the line, printable and at most `Command.kickReasonMaximum` bytes, since the kicked client is sent it.
    private static func parseKick(_ line: UnsafeRawBufferPointer, after verbEnd: Int) throws(ProtocolError) -> Command {
        let targetStart = skipSeparators(line, from: verbEnd)
        let targetEnd = wordEnd(line, from: targetStart)
        let word = String(decoding: UnsafeRawBufferPointer(rebasing: line[targetStart..<targetEnd]), as: UTF8.self)
        guard !word.isEmpty else { throw ProtocolError(.syntax, "KICK needs a client (<id>, <node>/<id> or user=<user>)") }
        let target: Command.KickTarget
        if word.hasPrefix("user=") {
            let user = String(word.dropFirst(5))
            guard !user.isEmpty else { throw ProtocolError(.syntax, "KICK user= needs a user name") }
            target = .user(user)
        } else {
            let parts = word.split(separator: "/", omittingEmptySubsequences: false)
            let digits = Array(parts[parts.count - 1].utf8)
            guard parts.count <= 2, let id = digits.withUnsafeBytes({ DecimalDigits.parse($0) }),
                  parts.count == 1 || !parts[0].isEmpty else {
                throw ProtocolError(.syntax, "KICK's client is <id>, <node>/<id> or user=<user>, as CLIENTS and WHO show it")
            }
            target = .client(node: parts.count == 2 ? String(parts[0]) : nil, id: id)
        }
        let reasonStart = skipSeparators(line, from: targetEnd)
        guard reasonStart < line.count else { return .kick(target: target, reason: nil) }
        let reason = UnsafeRawBufferPointer(rebasing: line[reasonStart...])
        guard reason.count <= Command.kickReasonMaximum else {
            throw ProtocolError(.syntax, "KICK's reason is at most \(Command.kickReasonMaximum) bytes")
        }
        guard !reason.contains(where: { $0 < 0x20 || $0 == 0x7F }), UTF8Validation.isValid(reason) else {
            throw ProtocolError(.syntax, "KICK's reason is UTF-8 text without control bytes")
        }
        return .kick(target: target, reason: String(decoding: reason, as: UTF8.self))
    }

    /// `PUB <subject> <payload>`: the payload is every byte after the one separator after the subject.
    private static func parsePub(_ line: UnsafeRawBufferPointer, after verbEnd: Int) throws(ProtocolError) -> Command {
        let subjectStart = skipSeparators(line, from: verbEnd)
        guard subjectStart < line.count else { throw ProtocolError(.syntax, "PUB needs a subject and a payload") }
        let subjectEnd = wordEnd(line, from: subjectStart)
        let subject = UnsafeRawBufferPointer(rebasing: line[subjectStart..<subjectEnd])
        try Subject.validateConcrete(subject)
        // "PUB a" with no separator at all is read as an empty payload, like "PUB a ".
        let payloadStart = min(subjectEnd + 1, line.count)
        return .pub(subject: subject, payload: UnsafeRawBufferPointer(rebasing: line[payloadStart...]))
    }

    /// `ASK <subject> <timeout-ms> <max-answers> <payload>`: the payload is taken as `PUB`'s.
    private static func parseAsk(_ line: UnsafeRawBufferPointer, after verbEnd: Int) throws(ProtocolError) -> Command {
        // Three words before the payload, without an array for them: its growth cost a third of an ASK's parse.
        func word(after position: Int) throws(ProtocolError) -> Range<Int> {
            let start = skipSeparators(line, from: position)
            guard start < line.count else {
                throw ProtocolError(.syntax, "ASK needs a subject, a timeout in ms, a maximum of answers and a payload")
            }
            return start..<wordEnd(line, from: start)
        }
        let subject = try word(after: verbEnd)
        let timeoutWord = try word(after: subject.upperBound)
        let maxAnswersWord = try word(after: timeoutWord.upperBound)
        let subjectBytes = UnsafeRawBufferPointer(rebasing: line[subject])
        try Subject.validateConcrete(subjectBytes)
        guard let timeout = DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: line[timeoutWord])), timeout > 0 else {
            throw ProtocolError(.syntax, "ASK's timeout must be a number of milliseconds from 1")
        }
        guard let maxAnswers = DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: line[maxAnswersWord])) else {
            throw ProtocolError(.syntax, "ASK's maximum of answers must be unsigned decimal digits (0: no cap)")
        }
        let payloadStart = min(maxAnswersWord.upperBound + 1, line.count)
        return .ask(subject: subjectBytes, timeoutMilliseconds: timeout, maxAnswers: maxAnswers,
                    payload: UnsafeRawBufferPointer(rebasing: line[payloadStart...]))
    }

    private static func concreteSubject(_ word: UnsafeRawBufferPointer) throws(ProtocolError) -> String {
        try Subject.validateConcrete(word)
        return String(decoding: word, as: UTF8.self)
    }

    private static func pattern(_ word: UnsafeRawBufferPointer) throws(ProtocolError) -> String {
        try Subject.validatePattern(word)
        return String(decoding: word, as: UTF8.self)
    }

    /// The separator-delimited words after `cursor`.
    private static func words(_ line: UnsafeRawBufferPointer, after cursor: Int) -> [UnsafeRawBufferPointer] {
        var result: [UnsafeRawBufferPointer] = []
        var position = skipSeparators(line, from: cursor)
        while position < line.count {
            let end = wordEnd(line, from: position)
            result.append(UnsafeRawBufferPointer(rebasing: line[position..<end]))
            position = skipSeparators(line, from: end)
        }
        return result
    }

    private static func skipSeparators(_ line: UnsafeRawBufferPointer, from start: Int) -> Int {
        var position = start
        while position < line.count, line[position] == space || line[position] == tab { position += 1 }
        return position
    }

    private static func wordEnd(_ line: UnsafeRawBufferPointer, from start: Int) -> Int {
        var position = start
        while position < line.count, line[position] != space, line[position] != tab { position += 1 }
        return position
    }
}
