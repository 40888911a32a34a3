import FanoutEventLoop

/// A client's address as its connection keeps it: one word, where its text took two. An IPv4 address and
/// port, what almost every client has, are kept in place and formatted when asked for (CLIENTS, logs, the
/// per-address count at disconnect); any other address keeps its text behind a reference.
enum PeerAddress {
    case ipv4(address: UInt32, port: UInt16)
    case other(Text)

    /// The text of an IPv6 or unix peer.
    final class Text {
        let value: String

        init(_ value: String) {
            self.value = value
        }
    }

    init(_ address: SocketAddress) {
        if let (address, port) = address.ipv4 {
            self = .ipv4(address: address, port: port)
        } else {
            self = .other(Text(address.description))
        }
    }

    /// `host:port` as `SocketAddress.description` writes it.
    var description: String {
        switch self {
        case let .ipv4(address, port):
            "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF):\(port)"
        case .other(let text):
            text.value
        }
    }
}

extension ClientConnection {
    /// `host:port` of the peer, for CLIENTS and logs.
    var peer: String { peerAddress.description }
}
