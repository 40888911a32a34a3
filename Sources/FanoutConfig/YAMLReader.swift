/// Reads the YAML that configuration files are written in, and refuses the rest.
///
/// Read: one document of block mappings nested by indentation (spaces), block sequences (`- item`), flow
/// sequences (`[a, "b"]`, which may go on over several lines), plain, single- and double-quoted scalars, `~` and
/// `null`, `{}`, and `#` comments. Refused, with the line they are on: anchors, aliases, tags, block scalars
/// (`|`, `>`), flow mappings, lists of mappings, multi-line plain or quoted scalars, tabs as indentation and a
/// second document. So a file is either read as a full YAML parser reads it or refused; quoting a value always
/// makes it a plain string. (Yams, a full parser, needs full Foundation: libFoundation, its ICU data and
/// FoundationInternationalization were about 8 MB of every fanoutd process's resident memory.)
public struct YAMLReader {
    struct Line {
        let number: Int
        let indent: Int
        /// The line after its indentation, without trailing blanks; never empty or a whole-line comment.
        let text: Substring
    }

    private var lines: [Line] = []
    private var position = 0
    /// The line each key and list item was read from, by its path (`history[0].subjects`).
    private var lineNumbers: [String: Int] = [:]

    /// The top-level mapping of `text` (empty for an empty document), with the line of every value in it.
    public static func read(_ text: String) throws(ConfigProblem) -> YAMLDocument {
        do {
            var reader = try YAMLReader(text)
            guard let first = reader.lines.first else { return YAMLDocument(settings: [:], lineNumbers: [:]) }
            let root = try reader.parseBlock(indent: first.indent, path: "")
            if reader.position < reader.lines.count {
                throw reader.problem(reader.lines[reader.position], "unexpected line at this indentation")
            }
            guard case .mapping(let settings) = root else {
                throw reader.problem(first, "the file must be 'setting: value' lines")
            }
            return YAMLDocument(settings: settings, lineNumbers: reader.lineNumbers)
        } catch let problem as ConfigProblem {
            throw problem
        } catch {
            throw ConfigProblem(description: "\(error)")
        }
    }

    private init(_ text: String) throws {
        var started = false
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = offset + 1
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            let indent = line.prefix { $0 == " " }.count
            var content = line.dropFirst(indent)
            while let last = content.last, last == " " || last == "\t" { content = content.dropLast() }
            if content.isEmpty || content.hasPrefix("#") { continue }
            if content.hasPrefix("\t") { throw Self.problem(number, "tabs cannot indent YAML; use spaces") }
            if indent == 0 && content.hasPrefix("%") { throw Self.problem(number, "YAML directives are not read") }
            if indent == 0 && content == "..." { break }
            if indent == 0 && (content == "---" || content.hasPrefix("--- ")) {
                if started { throw Self.problem(number, "only one YAML document is read") }
                if content != "---" && !content.hasPrefix("--- #") {
                    throw Self.problem(number, "put the settings on the lines after '---'")
                }
                continue
            }
            started = true
            lines.append(Line(number: number, indent: indent, text: content))
        }
    }

    // MARK: Blocks

    private mutating func parseBlock(indent: Int, path: String) throws -> YAMLNode {
        Self.isListItem(lines[position].text)
            ? try parseSequence(indent: indent, path: path) : try parseMapping(indent: indent, path: path)
    }

    private static func isListItem(_ text: Substring) -> Bool {
        text == "-" || text.hasPrefix("- ") || text.hasPrefix("-\t")
    }

    private mutating func parseMapping(indent: Int, path: String) throws -> YAMLNode {
        var values: [String: YAMLNode] = [:]
        while position < lines.count, lines[position].indent >= indent {
            let line = lines[position]
            if line.indent > indent { throw problem(line, "unexpected indentation") }
            if Self.isListItem(line.text) { throw problem(line, "a list item where 'key: value' was expected") }
            var cursor = Cursor(line.text)
            let key = try parseKey(&cursor, line)
            if values[key] != nil { throw problem(line, "'\(key)' is given twice") }
            let keyPath = path.isEmpty ? key : path + "." + key
            lineNumbers[keyPath] = line.number
            position += 1
            cursor.skipBlanks()
            if !cursor.atEndOrComment {
                values[key] = try parseInline(&cursor, line, path: keyPath)
            } else if position < lines.count, lines[position].indent > indent {
                values[key] = try parseBlock(indent: lines[position].indent, path: keyPath)
            } else if position < lines.count, lines[position].indent == indent, Self.isListItem(lines[position].text) {
                // A list may sit at its key's own indentation.
                values[key] = try parseSequence(indent: indent, path: keyPath)
            } else {
                values[key] = .null
            }
        }
        return .mapping(values)
    }

    private mutating func parseSequence(indent: Int, path: String) throws -> YAMLNode {
        var items: [YAMLNode] = []
        while position < lines.count, lines[position].indent >= indent {
            let line = lines[position]
            if line.indent > indent { throw problem(line, "unexpected indentation") }
            guard Self.isListItem(line.text) else { break }
            let itemPath = "\(path)[\(items.count)]"
            lineNumbers[itemPath] = line.number
            position += 1
            var cursor = Cursor(line.text.dropFirst())
            cursor.skipBlanks()
            var probe = cursor
            if !cursor.atEndOrComment, cursor.peek != "\"", cursor.peek != "'", (try? parseKey(&probe, line)) != nil {
                // `- key: value`: a mapping whose first entry shares the dash's line; the others line up below it.
                let column = line.indent + line.text.distance(from: line.text.startIndex, to: cursor.index)
                position -= 1
                lines[position] = Line(number: line.number, indent: column, text: cursor.rest)
                items.append(try parseMapping(indent: column, path: itemPath))
            } else if !cursor.atEndOrComment {
                items.append(try parseInline(&cursor, line, path: itemPath))
            } else if position < lines.count, lines[position].indent > indent {
                items.append(try parseBlock(indent: lines[position].indent, path: itemPath))
            } else {
                items.append(.null)
            }
        }
        return .sequence(items)
    }

    /// A key and its colon; the cursor is left after the colon.
    private func parseKey(_ cursor: inout Cursor, _ line: Line) throws -> String {
        let key: String
        if let quote = cursor.peek, quote == "\"" || quote == "'" {
            key = try parseQuoted(&cursor, line)
            cursor.skipBlanks()
            guard cursor.peek == ":" else { throw problem(line, "expected ':' after the key") }
            cursor.advance()
        } else {
            var text = ""
            while true {
                guard let character = cursor.peek else { throw problem(line, "expected 'key: value'") }
                cursor.advance()
                if character == ":" && (cursor.peek == nil || cursor.peek == " " || cursor.peek == "\t") { break }
                if character == "#" && text.last == " " { throw problem(line, "expected 'key: value'") }
                text.append(character)
            }
            while text.last == " " || text.last == "\t" { text.removeLast() }
            guard let first = text.first, !Self.indicators.contains(first) else {
                throw problem(line, "expected 'key: value' (complex and indicator keys are not read)")
            }
            key = text
        }
        guard cursor.peek == nil || cursor.peek == " " || cursor.peek == "\t" else {
            throw problem(line, "expected a space after ':'")
        }
        return key
    }

    // MARK: Values on one line

    /// Characters that cannot start a plain scalar, or start syntax this reader refuses.
    private static let indicators: Set<Character> = ["&", "*", "!", "|", ">", "%", "@", "`", "?", "{", "}", "[", "]", ","]

    /// The value after `key: ` or `- `: a quoted or plain scalar, `[...]` or `{}`.
    private mutating func parseInline(_ cursor: inout Cursor, _ line: Line, path: String) throws -> YAMLNode {
        let value: YAMLNode
        switch cursor.peek {
        case "\"", "'":
            value = .scalar(try parseQuoted(&cursor, line))
        case "[":
            return try parseFlowSequence(&cursor, line, path: path)
        case "{":
            cursor.advance()
            cursor.skipBlanks()
            guard cursor.peek == "}" else {
                throw problem(line, "{...} maps are not read; write the entries as indented 'key: value' lines")
            }
            cursor.advance()
            value = .mapping([:])
        case let first? where Self.indicators.contains(first):
            throw problem(line, "'\(first)' starts YAML syntax that is not read here (anchor, alias, tag or block "
                + "text); put the value in quotes")
        default:
            if Self.isListItem(cursor.rest) { throw problem(line, "a list cannot start after 'key:' on its line") }
            value = try plainScalar(&cursor, line, inFlow: false)
        }
        try expectEnd(&cursor, line)
        return value
    }

    /// `[a, "b", c]`, going on to the following lines until the `]`.
    private mutating func parseFlowSequence(_ cursor: inout Cursor, _ start: Line, path: String) throws -> YAMLNode {
        cursor.advance()
        var line = start
        var items: [YAMLNode] = []
        var wantsItem = true
        while true {
            cursor.skipBlanks()
            if cursor.atEndOrComment {
                guard position < lines.count else { throw problem(start, "the '[' list is not closed") }
                line = lines[position]
                position += 1
                cursor = Cursor(line.text)
                continue
            }
            switch cursor.peek {
            case "]":
                cursor.advance()
                try expectEnd(&cursor, line)
                return .sequence(items)
            case ",":
                if wantsItem { throw problem(line, "an empty item in a '[' list") }
                wantsItem = true
                cursor.advance()
            case "\"", "'":
                guard wantsItem else { throw problem(line, "expected ',' or ']' in a '[' list") }
                lineNumbers["\(path)[\(items.count)]"] = line.number
                items.append(.scalar(try parseQuoted(&cursor, line)))
                wantsItem = false
            case let first?:
                guard wantsItem else { throw problem(line, "expected ',' or ']' in a '[' list") }
                if Self.indicators.contains(first) {
                    throw problem(line, "'\(first)' in a '[' list: nested lists, maps and YAML syntax are not read; "
                        + "put the item in quotes")
                }
                lineNumbers["\(path)[\(items.count)]"] = line.number
                items.append(try plainScalar(&cursor, line, inFlow: true))
                wantsItem = false
            case nil:
                break
            }
        }
    }

    /// Unquoted text up to a comment, the end of the line, or (in a `[...]` list) a `,` or `]`.
    private func plainScalar(_ cursor: inout Cursor, _ line: Line, inFlow: Bool) throws -> YAMLNode {
        var text = ""
        while let character = cursor.peek {
            if inFlow && (character == "," || character == "]") { break }
            if character == "#" && (text.last == " " || text.last == "\t") { break }
            if character == ":" {
                let next = cursor.peekNext
                if next == nil || next == " " || next == "\t" || (inFlow && (next == "," || next == "]")) {
                    throw problem(line, "a ': ' inside a value; put the value in quotes")
                }
            }
            text.append(character)
            cursor.advance()
        }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return ["~", "null", "Null", "NULL"].contains(text) ? .null : .scalar(text)
    }

    /// A single- or double-quoted scalar on one line, with YAML's escapes.
    private func parseQuoted(_ cursor: inout Cursor, _ line: Line) throws -> String {
        let quote = cursor.peek!
        cursor.advance()
        var text = ""
        while true {
            guard let character = cursor.peek else {
                throw problem(line, "the quoted value is not closed on its line (multi-line values are not read)")
            }
            cursor.advance()
            if character == quote {
                // '' inside single quotes is one quote.
                guard quote == "'" && cursor.peek == "'" else { return text }
                cursor.advance()
                text.append("'")
            } else if character == "\\" && quote == "\"" {
                text.unicodeScalars.append(try escape(&cursor, line))
            } else {
                text.append(character)
            }
        }
    }

    private func escape(_ cursor: inout Cursor, _ line: Line) throws -> Unicode.Scalar {
        guard let code = cursor.peek else { throw problem(line, "a '\\' ends the line") }
        cursor.advance()
        let simple: [Character: Unicode.Scalar] = [
            "0": "\0", "a": "\u{07}", "b": "\u{08}", "t": "\t", "\t": "\t", "n": "\n", "v": "\u{0B}", "f": "\u{0C}",
            "r": "\r", "e": "\u{1B}", " ": " ", "\"": "\"", "/": "/", "\\": "\\", "N": "\u{85}", "_": "\u{A0}",
            "L": "\u{2028}", "P": "\u{2029}",
        ]
        if let scalar = simple[code] { return scalar }
        let digits = ["x": 2, "u": 4, "U": 8][code]
        guard let digits else { throw problem(line, "unknown escape '\\\(code)'") }
        var hex = ""
        for _ in 0..<digits {
            guard let digit = cursor.peek, digit.isHexDigit else { throw problem(line, "a bad '\\\(code)' escape") }
            hex.append(digit)
            cursor.advance()
        }
        guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
            throw problem(line, "a bad '\\\(code)' escape")
        }
        return scalar
    }

    /// After a value only blanks and a comment may follow.
    private func expectEnd(_ cursor: inout Cursor, _ line: Line) throws {
        let before = cursor.index
        cursor.skipBlanks()
        if cursor.peek == nil || (cursor.peek == "#" && cursor.index != before) { return }
        throw problem(line, "unexpected text after the value")
    }

    // MARK: Errors

    private func problem(_ line: Line, _ text: String) -> ConfigProblem {
        Self.problem(line.number, text)
    }

    private static func problem(_ number: Int, _ text: String) -> ConfigProblem {
        ConfigProblem(line: number, text)
    }
}

/// A position in one line's text.
private struct Cursor {
    let text: Substring
    var index: Substring.Index

    init(_ text: Substring) {
        self.text = text
        index = text.startIndex
    }

    var peek: Character? { index < text.endIndex ? text[index] : nil }

    var peekNext: Character? {
        guard index < text.endIndex else { return nil }
        let next = text.index(after: index)
        return next < text.endIndex ? text[next] : nil
    }

    var rest: Substring { text[index...] }

    /// True at the end of the text or at a comment; callers skip blanks first, so a `#` here follows a blank,
    /// a list's `[` or `,`, or starts a continuation line.
    var atEndOrComment: Bool { peek == nil || peek == "#" }

    mutating func advance() { index = text.index(after: index) }

    mutating func skipBlanks() {
        while let character = peek, character == " " || character == "\t" { advance() }
    }
}
