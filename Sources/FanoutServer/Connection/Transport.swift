/// How a client reaches the server, shown in CLIENTS.
enum Transport: UInt8, Sendable, CustomStringConvertible {
    case tcp
    case tls
    case unix
    /// RFC 6455 over the HTTP listener: one protocol line per text frame.
    case webSocket

    var description: String {
        switch self {
        case .tcp: "tcp"
        case .tls: "tls"
        case .unix: "unix"
        case .webSocket: "ws"
        }
    }
}
