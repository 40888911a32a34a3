import FanoutEventLoop

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

    /// Upper bound of each count setting: a session or a retained message holds memory, so a bound past this is
    /// a typo rather than a plan (max_memory still bounds the bytes).
    static let maxCount = 100_000_000

    /// Problems of the MQTT settings alone: addresses that do not parse or are unix paths (MQTT speaks TCP),
    /// and counts out of range.
    func problems() -> [String] {
        var found: [String] = []
        for (name, addresses) in [("mqtt_listen", listen), ("mqtt_tls_listen", tlsListen)] {
            for address in addresses {
                if let problem = SocketAddress.problem(parsing: address) {
                    found.append("\(name): \(problem)")
                } else if address.hasPrefix("unix:") {
                    found.append("\(name): \(address): must be HOST:PORT")
                }
            }
        }
        for (name, value) in [("mqtt_max_retained", maxRetained), ("mqtt_max_sessions", maxSessions),
                              ("mqtt_session_max_messages", sessionMaxMessages)]
        where value < 0 || value > Self.maxCount {
            found.append("\(name): must be 0 ... \(Self.maxCount)")
        }
        return found
    }

    /// Problems that need the other listeners: mqtt_tls_listen's certificate, and an address another listener
    /// already takes (port 0 excepted: the kernel gives each its own).
    func problems(listeners: Listeners, tls: TLSSettings) -> [String] {
        var found: [String] = []
        if !tlsListen.isEmpty && (tls.certificate == nil || tls.key == nil) {
            found.append("mqtt_tls_listen: needs tls_cert and tls_key")
        }
        let mine = listen.map { ("mqtt_listen", $0) } + tlsListen.map { ("mqtt_tls_listen", $0) }
        let others = listeners.listen.map { ("listen", $0) } + tls.listen.map { ("tls_listen", $0) }
            + [listeners.httpListen.map { ("http_listen", $0) }, listeners.httpsListen.map { ("https_listen", $0) }]
            .compactMap { $0 }
        for (index, (name, text)) in mine.enumerated() {
            guard let address = try? SocketAddress(parsing: text), !address.description.hasSuffix(":0") else {
                continue
            }
            // Earlier MQTT addresses count too, so that a repeat within one list is found once.
            for (otherName, otherText) in Array(mine[..<index]) + others {
                guard let other = try? SocketAddress(parsing: otherText),
                      other.description == address.description else { continue }
                found.append("\(name): \(text) is also \(otherName); give each listener its own address")
                break
            }
        }
        return found
    }
}
