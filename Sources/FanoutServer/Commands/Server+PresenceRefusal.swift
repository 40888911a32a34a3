import FanoutProtocol

/// Joins and leaves on `$presence.<subject>` (1.3) are the server's alone: a client's PUB, BPUB, ASK or HTTP
/// publish there is refused, auth on or off, before any permission check, so that no grant (not even `>`) lets a
/// client forge one. The server's own joins and leaves go to the engine directly and never meet this check.
extension Server {
    /// Whether `command` is a PUB or an ASK to a `$presence.` subject. For a PUB, the hot verb, it is one compare
    /// of the subject's first byte (few subjects start with `$`), inlined into the dispatcher.
    @inline(__always)
    static func publishesPresence(_ command: Command) -> Bool {
        switch command {
        case .pub(let subject, _), .ask(let subject, _, _, _):
            subject.first == UInt8(ascii: "$") && PresenceText.isEventSubject(subject)
        default:
            false
        }
    }
}

extension ProtocolError {
    /// The refusal of a publish to a `$presence.` subject (HTTP answers it 403, `denied`).
    static var presencePublish: ProtocolError {
        ProtocolError(.denied, "clients cannot publish to \(PresenceText.subjectPrefix) subjects")
    }
}
