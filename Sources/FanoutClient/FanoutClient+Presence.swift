import FanoutProtocol

/// Presence (protocol 1.3): who holds a subscription to a subject (`WHO`), closing a connection (`KICK`), and
/// the joins and leaves the server publishes on `$presence.<subject>`, read with FanoutProtocol's
/// `PresenceEvent` so that the server and every Swift client spell them in one place.
///
/// These follow the library's model, not `async`: a `FanoutClient` and its callbacks live on its loop's thread,
/// and an `async` method would resume elsewhere.
extension FanoutClient {
    /// Lists the members of the concrete `subject` with `WHO`: the completion gets the total count and the
    /// members the server listed, oldest join first: at most `limit` (the server's default is 100, and it lists
    /// at most 1000 whatever the limit; 0 lists none but counts).
    /// A subject the server keeps no presence for fails with `.server` (`syntax no presence kept for ...`).
    public func who(
        _ subject: String, limit: Int? = nil,
        completion: @escaping (Result<(count: Int, members: [PresenceMember]), ClientError>) -> Void
    ) {
        let refused = ClientError.refusal { () throws(ClientError) in
            try CommandWords.checkSubject(subject)
            if let limit, limit < 0 { throw .invalid("bad WHO limit \(limit): a count of members, 0 or more") }
        }
        if let refused { return completion(.failure(refused)) }
        send("WHO \(subject)" + (limit.map { " \($0)" } ?? ""), .text { result in
            completion(result.flatMap(Self.parseWho))
        })
    }

    /// Closes a connection with `KICK`: `client` as `CLIENTS` and `WHO` show it (`7`, `n1/7`) or `user=<user>` for
    /// all of a user's connections. Each is told `-ERR kicked <reason>` (the server's default reason is "by an
    /// administrator"). The completion gets how many connections were closed; a connection not allowed to
    /// administer fails with `.server` (`denied ...`). A client kicking itself gets its count, then `.kicked`.
    public func kick(
        _ client: String, reason: String? = nil, completion: @escaping (Result<Int, ClientError>) -> Void
    ) {
        let refused = ClientError.refusal { () throws(ClientError) in
            try CommandWords.checkKickTarget(client)
            if let reason { try CommandWords.checkKickReason(reason) }
        }
        if let refused { return completion(.failure(refused)) }
        send("KICK \(client)" + (reason.map { " \($0)" } ?? ""), .text { result in
            completion(result.flatMap { text in
                Int(text).map { .success($0) } ?? .failure(.protocolViolation("+OK \(text)"))
            })
        })
    }

    /// Subscribes to the joins and leaves of `subjects` (patterns allowed: `chat.>` watches every room), that is
    /// to `$presence.<subject>`, with `subscribe`'s resume and `last` behaviour. `handler` gets each event with
    /// its seq, or, for a payload that is not a join or leave this version can read, `UnreadablePresence`
    /// with the message as it came: it is never dropped unseen. The completion gets the subscription count.
    public func subscribePresence(
        _ subjects: [String], last: Int? = nil,
        handler: @escaping (Result<PresenceUpdate, UnreadablePresence>) -> Void,
        completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        subscribe(subjects.map(PresenceText.eventSubject), last: last, handler: { message in
            handler(PresenceUpdate.read(message))
        }, completion: completion)
    }

    /// Stops the presence subscriptions of `subjects` (as given to `subscribePresence`).
    public func unsubscribePresence(_ subjects: [String], completion: ((Result<Int, ClientError>) -> Void)? = nil) {
        guard !subjects.isEmpty else {
            completion?(.failure(.invalid("unsubscribing from presence needs at least one subject")))
            return
        }
        unsubscribe(subjects.map(PresenceText.eventSubject), completion: completion)
    }

    /// `<count> <member> ...`, the text of WHO's `+OK`.
    static func parseWho(_ text: String) -> Result<(count: Int, members: [PresenceMember]), ClientError> {
        let words = text.split(separator: " ")
        guard let first = words.first, let count = Int(first), count >= words.count - 1 else {
            return .failure(.protocolViolation("+OK \(text.prefix(80))"))
        }
        var members: [PresenceMember] = []
        members.reserveCapacity(words.count - 1)
        for word in words.dropFirst() {
            guard let member = PresenceMember(parsing: word) else {
                return .failure(.protocolViolation("WHO member '\(word.prefix(80))'"))
            }
            members.append(member)
        }
        return .success((count, members))
    }
}

/// One join or leave from a presence subscription.
public struct PresenceUpdate: Equatable, Sendable {
    /// The subject whose members changed (`chat.room1` for a message on `$presence.chat.room1`).
    public let subject: String
    /// The message's seq on `$presence.<subject>`, as for any message (resumed and checked for gaps alike).
    public let seq: UInt64
    public let event: PresenceEvent

    public init(subject: String, seq: UInt64, event: PresenceEvent) {
        self.subject = subject
        self.seq = seq
        self.event = event
    }

    /// The update a `$presence.` message carries, or why it carries none.
    static func read(_ message: Message) -> Result<PresenceUpdate, UnreadablePresence> {
        guard let subject = PresenceText.memberSubject(of: message.subject),
              let text = String(validating: message.payload, as: UTF8.self),
              let event = PresenceEvent(parsing: Substring(text)) else {
            return .failure(UnreadablePresence(message: message))
        }
        return .success(PresenceUpdate(subject: subject, seq: message.seq, event: event))
    }
}

/// A message on a presence subscription that is not a join or leave this version can read (from a server of a
/// later version, say): handed to the handler as it came, so that nothing on the subject goes unseen.
public struct UnreadablePresence: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: Message

    public init(message: Message) { self.message = message }

    public var description: String {
        // One line, whatever the payload holds.
        let bytes = message.payload.prefix(200).map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: "?") : $0 }
        let shown = String(decoding: bytes, as: UTF8.self)
        return "unreadable presence event on \(message.subject) seq \(message.seq): '\(shown)'"
    }
}
