/// The MQTT 3.1.1 listener (`docs/mqtt.md`): where it listens, and the bounds of what it keeps for clients
/// that are away (persistent sessions) and for topics (retained messages). Off by default.
public struct MQTTSettings: Sendable, Equatable {
    /// Addresses (`HOST:PORT`) serving MQTT in the clear; empty (the default) turns the listener off.
    public var listen: [String] = []
    /// Addresses serving MQTT over TLS, with tls_cert and tls_key.
    public var tlsListen: [String] = []
    /// Retained messages kept in all (one per topic); past it, a new topic's retained message is refused
    /// (the PUBLISH itself still goes out) and counted. 0 keeps none.
    public var maxRetained = 10_000
    /// Sessions (clean session 0) kept for clients that are away; past it, the one away longest is dropped.
    public var maxSessions = 10_000
    /// QoS 1 and 2 messages kept per session while its client is away; past it, the oldest are dropped and
    /// counted.
    public var sessionMaxMessages = 1_000
    /// How long a session is kept once its client is gone; nil keeps it until `maxSessions` pushes it out.
    public var sessionExpiry: Duration? = .seconds(86_400)

    public init() {}

    /// Whether any MQTT listener is configured.
    public var isOn: Bool { !listen.isEmpty || !tlsListen.isEmpty }
}
