/// How a client reaches the server, shown in CLIENTS.
enum Transport: UInt8, Sendable, CustomStringConvertible {
    case tcp
    case tls
    case unix
    /// RFC 6455 over the HTTP listener: one protocol line per text frame.
    case webSocket
    /// Server-Sent Events (`GET /events`): MSG lines become events, other lines comments or error events.
    case eventStream
    /// An HTTP request executed as a protocol line (`POST /publish/...`): its replies are captured.
    case httpRequest
    /// MQTT 3.1.1 on `mqtt_listen`: packets in, translated to protocol lines; PUBLISH packets out.
    case mqtt
    /// MQTT 3.1.1 over TLS on `mqtt_tls_listen`.
    case mqttTLS

    /// Whether lines are written as they are (the line protocol's own transports).
    var writesLines: Bool { rawValue <= Transport.unix.rawValue }

    /// Whether its client can send `ANSWER`: an event stream's client says nothing after its request, and an
    /// HTTP request's ends with its reply, so neither is put a question (nor counted in `asked`, nor waited for).
    /// MQTT has no way to answer a question either.
    var canAnswer: Bool { self == .tcp || self == .tls || self == .unix || self == .webSocket }

    /// Whether an MQTT client is on the other end (its adapter is `MQTTTransport`).
    var isMQTT: Bool { self == .mqtt || self == .mqttTLS }

    var description: String {
        switch self {
        case .tcp: "tcp"
        case .tls: "tls"
        case .unix: "unix"
        case .webSocket: "ws"
        case .eventStream: "sse"
        case .httpRequest: "http"
        case .mqtt: "mqtt"
        case .mqttTLS: "mqtts"
        }
    }
}
