import FanoutProtocol

/// MQTT topics <-> fanout subjects, both ways, pure (docs/mqtt.md, "Topics and subjects", states the rule).
///
/// Levels map to tokens (`a/b/c` <-> `a.b.c`). A level that fanout's alphabet cannot carry as it is, is
/// escaped with `~`: an empty level is the token `~`; in a non-empty level every byte outside 0x21...0x7E,
/// every `.` and every `~` is `~` and two upper-case hex digits (`a.b` -> `a~2Eb`, `ü` -> `~C3~BC`), and a
/// level that is exactly `*` or `>` is `~2A` or `~3E` (so that it stays literal). The escape is canonical:
/// each topic has one subject, and a subject whose `~` is not this mapping's own escape has no topic.
/// Inputs are topics and filters the decoder already checked (UTF-8, wildcard placement).
public enum MQTTTopicMapping {
    static let tilde = UInt8(ascii: "~")
    static let dot = UInt8(ascii: ".")
    static let slash = UInt8(ascii: "/")
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// The concrete subject of a topic name. Throws when the subject would be over `Subject.maxLength`.
    public static func subject(forTopic topic: String) throws(MQTTTopicMappingError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(topic.utf8.count)
        for (index, level) in topic.utf8.split(separator: slash, omittingEmptySubsequences: false).enumerated() {
            if index > 0 { out.append(dot) }
            appendLevel(level, into: &out)
        }
        return try checked(out, of: topic)
    }

    /// The fanout patterns a topic filter stands for, with its group if it is `$share/<group>/<filter>`.
    public static func patterns(forFilter filter: String) throws(MQTTTopicMappingError) -> MQTTFilterPatterns {
        let (group, plain) = try splitShared(filter)
        var out: [UInt8] = []
        out.reserveCapacity(plain.utf8.count)
        let levels = plain.utf8.split(separator: slash, omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if index > 0 { out.append(dot) }
            if level.elementsEqual("+".utf8) {
                out.append(UInt8(ascii: "*"))
            } else if level.elementsEqual("#".utf8) {
                out.append(UInt8(ascii: ">"))
            } else {
                appendLevel(level, into: &out)
            }
        }
        let pattern = try checked(out, of: filter)
        // `a/#` matches `a` itself too (section 4.7.1.2), which `a.>` does not: its parent is a second pattern.
        // A lone `#` needs none: every subject has at least one token.
        var parent: String?
        if levels.count > 1, levels.last?.elementsEqual("#".utf8) == true {
            parent = String(decoding: out.dropLast(2), as: UTF8.self)
        }
        let first = levels.first.map { $0.elementsEqual("+".utf8) || $0.elementsEqual("#".utf8) } ?? false
        return MQTTFilterPatterns(pattern: pattern, parent: parent, group: group, excludesDollarSubjects: first)
    }

    /// The topic name of a concrete subject; nil when it has none: a `~` that is not this mapping's canonical
    /// escape, escapes that decode to bytes that are not UTF-8 (or U+0000), `+` or `#` (which no topic name
    /// may hold), or `/` inside a token (MQTT would read two levels: `a/b.c` must not meet `a.b.c`). A subject
    /// over `Subject.maxLength` bytes is no subject, and has none either.
    public static func topic(forSubject subject: String) -> String? {
        guard subject.utf8.count <= Subject.maxLength else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(subject.utf8.count)
        var level: [UInt8] = []
        var reencoded: [UInt8] = []
        for (index, token) in subject.utf8.split(separator: dot, omittingEmptySubsequences: false).enumerated() {
            if index > 0 { out.append(slash) }
            level.removeAll(keepingCapacity: true)
            if !token.elementsEqual(CollectionOfOne(tilde)) {
                var bytes = token.makeIterator()
                while let byte = bytes.next() {
                    if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "#") || byte == slash { return nil }
                    guard byte == tilde else {
                        level.append(byte)
                        continue
                    }
                    guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else {
                        return nil
                    }
                    level.append(high << 4 | low)
                }
                reencoded.removeAll(keepingCapacity: true)
                appendLevel(level[...], into: &reencoded)
                guard reencoded.elementsEqual(token) else { return nil }
            }
            out += level
        }
        let valid = out.withUnsafeBytes { (try? MQTTText.validate($0, field: "topic")) != nil }
        return valid ? String(decoding: out, as: UTF8.self) : nil
    }

    /// `$share/<group>/<filter>` split into its group and filter (MQTT 5's shared subscriptions, which many
    /// 3.1.1 servers accept); any other filter comes back whole with no group. The group must be a fanout
    /// group name (1 to 64 bytes of `[A-Za-z0-9_.-]`) and the filter after it non-empty.
    public static func splitShared(_ filter: String) throws(MQTTTopicMappingError) -> (group: String?, filter: String) {
        let prefix = "$share/"
        guard filter.utf8.starts(with: prefix.utf8) else { return (nil, filter) }
        let rest = filter.utf8.dropFirst(prefix.utf8.count)
        guard let slashIndex = rest.firstIndex(of: slash) else {
            throw MQTTTopicMappingError("\(MQTTTopicRules.excerpt(filter)): $share/ needs a group and a filter")
        }
        let group = rest[..<slashIndex]
        let inner = rest[rest.index(after: slashIndex)...]
        guard (1...64).contains(group.count), group.allSatisfy(isGroupByte) else {
            throw MQTTTopicMappingError(
                "\(MQTTTopicRules.excerpt(filter)): a $share group is 1 to 64 bytes of [A-Za-z0-9_.-]")
        }
        guard !inner.isEmpty else {
            throw MQTTTopicMappingError("\(MQTTTopicRules.excerpt(filter)): $share/ needs a filter after its group")
        }
        return (String(decoding: group, as: UTF8.self), String(decoding: inner, as: UTF8.self))
    }

    private static func isGroupByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"): true
        default: false
        }
    }

    /// Appends one literal level's token.
    static func appendLevel(_ level: some Collection<UInt8>, into out: inout [UInt8]) {
        if level.isEmpty {
            out.append(tilde)
        } else if level.count == 1, let only = level.first, only == UInt8(ascii: "*") || only == UInt8(ascii: ">") {
            appendEscape(only, into: &out)
        } else {
            for byte in level {
                if byte < 0x21 || byte > 0x7E || byte == dot || byte == tilde {
                    appendEscape(byte, into: &out)
                } else {
                    out.append(byte)
                }
            }
        }
    }

    private static func appendEscape(_ byte: UInt8, into out: inout [UInt8]) {
        out += [tilde, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func checked(_ bytes: [UInt8], of source: String) throws(MQTTTopicMappingError) -> String {
        guard bytes.count <= Subject.maxLength else {
            throw MQTTTopicMappingError("\(MQTTTopicRules.excerpt(source)) maps to a subject of \(bytes.count) bytes; "
                                        + "the limit is \(Subject.maxLength)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A topic filter's fanout side: the pattern, the parent a trailing `#` also matches, the `$share` group, and
/// whether subjects starting with `$` must be kept from it.
public struct MQTTFilterPatterns: Equatable, Sendable {
    /// `a/+/#` -> `a.*.>`.
    public var pattern: String
    /// `a` for `a/#` (section 4.7.1.2: `#` also matches its parent level); nil otherwise.
    public var parent: String?
    /// The group of `$share/<group>/<filter>`, to subscribe as QSUB does; nil for a plain filter.
    public var group: String?
    /// True when the filter starts with `+` or `#`: such a filter matches no topic starting with `$`
    /// (MQTT-4.7.2-1), which fanout patterns cannot say, so the listener tests `admits` per message.
    public var excludesDollarSubjects: Bool

    public init(pattern: String, parent: String?, group: String?, excludesDollarSubjects: Bool) {
        self.pattern = pattern
        self.parent = parent
        self.group = group
        self.excludesDollarSubjects = excludesDollarSubjects
    }

    /// Whether a subject one of the patterns matched may go to this filter's subscriber.
    public func admits(subject: String) -> Bool {
        !excludesDollarSubjects || subject.utf8.first != UInt8(ascii: "$")
    }
}

/// A topic or filter that has no fanout subject (too long, or a `$share` without a usable group or filter).
public struct MQTTTopicMappingError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
