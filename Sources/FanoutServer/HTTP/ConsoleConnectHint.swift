import FanoutConsole
import FanoutEventLoop

/// The console page as this server serves it: its connect hint (the `connect-hint` line of `ConsolePage`) names
/// the address the protocol really listens on, as `nc` and `fanout --server` take it, instead of the default
/// port, which a server on another port (or a unix socket) does not have. Filled in per request, since a
/// reload may change the listeners; the page is cut at its markers once.
enum ConsoleConnectHint {
    /// How a terminal reaches the protocol: the `nc` (or `openssl s_client`) command, and the `fanout` option.
    struct Hint: Equatable {
        var command: String
        /// Empty for fanout's default server, 127.0.0.1:7411.
        var serverOption: String
    }

    private static let commandMarker = "{{nc-command}}"
    private static let serverMarker = "{{server-option}}"

    /// The page between its markers, and which marker follows each piece (nil after the last).
    private static let pieces: [(bytes: ArraySlice<UInt8>, marker: String?)] = {
        let page = ConsolePage.html
        let markers = [commandMarker, serverMarker].map { ($0, Array($0.utf8)) }
        var pieces: [(bytes: ArraySlice<UInt8>, marker: String?)] = []
        var start = 0
        var index = 0
        while index < page.count {
            guard page[index] == UInt8(ascii: "{"),
                  let (marker, bytes) = markers.first(where: { page[index...].starts(with: $0.1) }) else {
                index += 1
                continue
            }
            pieces.append((page[start..<index], marker))
            index += bytes.count
            start = index
        }
        pieces.append((page[start...], nil))
        return pieces
    }()

    /// The page with `hint` in its markers.
    static func page(_ hint: Hint) -> [UInt8] {
        var page: [UInt8] = []
        page.reserveCapacity(ConsolePage.html.count + 256)
        for piece in pieces {
            page += piece.bytes
            switch piece.marker {
            case commandMarker?: page += escaped(hint.command)
            case serverMarker?: page += escaped(hint.serverOption)
            default: break
            }
        }
        return page
    }

    /// The hint for the first plain listener (a TCP one before a unix socket), else the first TLS one.
    static func hint(plain: [SocketAddress], tls: [SocketAddress]) -> Hint {
        if let address = plain.first(where: { !$0.isUnix }) {
            let host = reachableHost(address)
            let server = address.isIPv6 ? "[\(host)]:\(address.port)" : "\(host):\(address.port)"
            return Hint(command: "nc \(host) \(address.port)",
                        serverOption: server == "127.0.0.1:7411" ? "" : " --server \(server)")
        }
        if let address = plain.first {
            return Hint(command: "nc -U \(address.unixPath)", serverOption: " --server unix:\(address.unixPath)")
        }
        if let address = tls.first {
            let host = reachableHost(address)
            let server = address.isIPv6 ? "[\(host)]:\(address.port)" : "\(host):\(address.port)"
            return Hint(command: "openssl s_client -quiet -connect \(server)",
                        serverOption: " --tls --server \(server)")
        }
        return Hint(command: "nc HOST PORT", serverOption: " --server HOST:PORT")
    }

    /// A wildcard bind is reached on loopback from the same machine.
    private static func reachableHost(_ address: SocketAddress) -> String {
        switch address.host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "::1"
        case let host: host
        }
    }

    private static func escaped(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): bytes += Array("&amp;".utf8)
            case UInt8(ascii: "<"): bytes += Array("&lt;".utf8)
            case UInt8(ascii: ">"): bytes += Array("&gt;".utf8)
            case UInt8(ascii: "\""): bytes += Array("&quot;".utf8)
            case UInt8(ascii: "'"): bytes += Array("&#39;".utf8)
            default: bytes.append(byte)
            }
        }
        return bytes
    }
}
