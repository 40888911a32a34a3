/// Presence (1.3) as text: a member as `WHO` lists it, and the join and leave payloads the server publishes on
/// `$presence.<subject>`. The server writes them and every client reads them with these types, so the words
/// are spelt in one place.
public enum PresenceText {
    /// The prefix of the subjects that carry joins and leaves: `$presence.<subject>`.
    public static let subjectPrefix = "$presence."

    /// The longest subject that keeps presence: its `$presence.` subject must still be a subject (255 bytes).
    public static let longestSubject = Subject.maxLength - subjectPrefix.utf8.count

    /// `$presence.<subject>`.
    public static func eventSubject(for subject: String) -> String { subjectPrefix + subject }

    /// The subject whose joins and leaves `eventSubject` carries, or nil when it is not a `$presence.` subject.
    public static func memberSubject(of eventSubject: String) -> String? {
        guard eventSubject.hasPrefix(subjectPrefix) else { return nil }
        let rest = eventSubject.dropFirst(subjectPrefix.count)
        return rest.isEmpty ? nil : String(rest)
    }

    /// Whether `subject` (bytes, as a command carries it) starts with `$presence.`: clients may not publish there.
    public static func isEventSubject(_ subject: UnsafeRawBufferPointer) -> Bool {
        // One compare rules out almost every subject: few start with "$".
        guard subject.count > prefixBytes.count, subject[0] == UInt8(ascii: "$") else { return false }
        return prefixBytes.indices.allSatisfy { subject[$0] == prefixBytes[$0] }
    }

    private static let prefixBytes = Array(subjectPrefix.utf8)

    /// Why a member left, as a leave's `reason=` says it.
    public enum LeaveReason: String, CaseIterable, Sendable {
        case unsub, closed, timeout, kicked, shutdown
        case slowConsumer = "slow-consumer"
        case nodeLost = "node-lost"
    }
}

/// One member of a subject: `id=<client>,user=<user>,since_s=<n>[,group=<g>]` (no spaces inside).
public struct PresenceMember: Equatable, Sendable {
    /// The client id as `CLIENTS` shows it, or `<node>/<id>` on several nodes.
    public var client: String
    /// The authenticated user, or nil (`-` on the wire).
    public var user: String?
    /// Seconds it has been a member.
    public var sinceSeconds: UInt64
    /// The group it is a member with (`QSUB`), or nil.
    public var group: String?

    public init(client: String, user: String?, sinceSeconds: UInt64, group: String? = nil) {
        self.client = client
        self.user = user
        self.sinceSeconds = sinceSeconds
        self.group = group
    }

    /// The member as one word. A user name may hold any text (a token's `sub`): a space, comma, `=` or control
    /// byte in it is written `_`, so that the word stays one word of comma-separated fields.
    public var text: String {
        var text = "id=\(client),user=\(user.map(Self.listable) ?? "-"),since_s=\(sinceSeconds)"
        if let group { text += ",group=\(group)" }
        return text
    }

    /// Reads a member word; nil when `id`, `user` or `since_s` is missing or malformed. Unknown fields are
    /// ignored, so that a later version may add some.
    public init?(parsing word: Substring) {
        var client: String?
        var user: String?
        var since: UInt64?
        var group: String?
        for field in word.split(separator: ",", omittingEmptySubsequences: false) {
            guard let equals = field.firstIndex(of: "=") else { return nil }
            let value = String(field[field.index(after: equals)...])
            switch field[..<equals] {
            case "id": client = value
            case "user": user = value
            case "since_s": since = UInt64(value)
            case "group": group = value
            default: continue
            }
        }
        guard let client, !client.isEmpty, let user, !user.isEmpty, let since else { return nil }
        self.init(client: client, user: user == "-" ? nil : user, sinceSeconds: since, group: group)
    }

    /// A user name as one word of a listing (`WHO`, `CLIENTS`): a space, comma, `=` or control byte becomes `_`.
    public static func listable(_ name: String) -> String {
        String(decoding: name.utf8.map { byte in
            byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "=")
                ? UInt8(ascii: "_") : byte
        }, as: UTF8.self)
    }
}

/// A join or leave, as published on `$presence.<subject>`: `join <member>` or `leave <member>,reason=<r>`.
public struct PresenceEvent: Equatable, Sendable {
    public enum Kind: String, Sendable {
        case join, leave
    }

    public var kind: Kind
    public var member: PresenceMember
    /// Why it left; nil for a join. A reason this version does not know is kept as its text.
    public var reason: String?

    public init(join member: PresenceMember) {
        self.kind = .join
        self.member = member
        self.reason = nil
    }

    public init(leave member: PresenceMember, reason: PresenceText.LeaveReason) {
        self.kind = .leave
        self.member = member
        self.reason = reason.rawValue
    }

    /// The payload the server publishes.
    public var payload: String {
        switch kind {
        case .join: "join \(member.text)"
        case .leave: "leave \(member.text),reason=\(reason ?? "closed")"
        }
    }

    /// Reads a payload; nil when it is not a join or leave.
    public init?(parsing payload: Substring) {
        guard let space = payload.firstIndex(of: " "),
              let kind = Kind(rawValue: String(payload[..<space])) else { return nil }
        var word = payload[payload.index(after: space)...]
        var reason: String?
        if kind == .leave {
            // The reason is the last field: a user name never holds "," (the member's text writes it "_").
            guard let comma = word.lastIndex(of: ","), word[comma...].hasPrefix(",reason=") else { return nil }
            reason = String(word[word.index(comma, offsetBy: 8)...])
            word = word[..<comma]
            guard reason?.isEmpty == false else { return nil }
        }
        guard let member = PresenceMember(parsing: word) else { return nil }
        self.kind = kind
        self.member = member
        self.reason = reason
    }
}
