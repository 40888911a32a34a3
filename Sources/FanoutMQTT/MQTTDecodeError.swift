/// Why the decoder refused a peer's bytes, with the standard's rule it names (for example "MQTT-3.8.3-3"),
/// so that a listener can log it and act as the standard requires for that kind of problem.
public struct MQTTDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What the listener must do; kept apart because section 3.1.4 answers two CONNECT problems with a
    /// CONNACK return code before the close, where every other problem is a plain close (section 4.8).
    public enum Kind: Equatable, Sendable {
        /// A malformed packet or a protocol violation: close the network connection.
        case malformed
        /// CONNECT named protocol "MQTT" at a level other than 4: CONNACK 0x01, then close (MQTT-3.1.2-2).
        case unacceptableProtocolLevel
        /// CONNECT's client identifier cannot be accepted: CONNACK 0x02, then close (MQTT-3.1.3-9).
        case identifierRejected
        /// The fixed header announced a packet over the decoder's maximum: close, nothing was buffered.
        case tooLarge
    }

    public var kind: Kind
    /// The standard's conformance statement (or section) broken, "MQTT-x.y.z-n".
    public var rule: String
    /// What was wrong, in words, for a log line. Never holds the peer's bytes beyond a short excerpt.
    public var reason: String

    public init(_ kind: Kind, rule: String, _ reason: String) {
        self.kind = kind
        self.rule = rule
        self.reason = reason
    }

    public var description: String { "\(rule): \(reason)" }

    static func malformed(_ rule: String, _ reason: String) -> MQTTDecodeError {
        MQTTDecodeError(.malformed, rule: rule, reason)
    }
}
