/// The server side of the opening handshake (RFC 6455 §4.2): checks an upgrade request and answers it.
///
/// Pure: the SHA-1 the accept value needs is passed in, so that this file needs no crypto library; its base64 is
/// the protocol module's.
import FanoutProtocol

public enum WebSocketHandshake {
    /// The GUID every accept value is made with (§1.3).
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Why an upgrade is refused: the response to send before closing.
    public struct Refusal: Error, Equatable {
        public let status: Int
        public let reason: String
        /// Extra headers (426 names the version served).
        public let headers: [String]
    }

    /// Checks `head` as an upgrade request whose Origin `OriginPolicy` allows under `allowedOrigins`
    /// (http_allowed_origins). Returns the client's key.
    public static func validate(_ head: HTTPRequestHead, allowedOrigins: [String]) -> Result<String, Refusal> {
        guard head.method == "GET" else { return .failure(Refusal(status: 405, reason: "the upgrade must be a GET", headers: ["Allow: GET"])) }
        guard head.header("upgrade")?.lowercased() == "websocket", head.headerLists("connection", "upgrade") else {
            return .failure(Refusal(status: 426, reason: "this path speaks WebSocket: send Upgrade: websocket",
                                    headers: ["Upgrade: websocket", "Connection: Upgrade"]))
        }
        guard head.header("sec-websocket-version") == "13" else {
            return .failure(Refusal(status: 426, reason: "unsupported Sec-WebSocket-Version; 13 is served",
                                    headers: ["Sec-WebSocket-Version: 13"]))
        }
        guard let key = head.header("sec-websocket-key"), let decoded = Base64.decode(key), decoded.count == 16 else {
            return .failure(Refusal(status: 400, reason: "missing or malformed Sec-WebSocket-Key", headers: []))
        }
        let policy = OriginPolicy(allowed: allowedOrigins)
        if case .refused(let reason) = policy.verdict(origin: head.header("origin"), host: head.header("host")) {
            return .failure(Refusal(status: 403, reason: reason, headers: []))
        }
        return .success(key)
    }

    /// `Sec-WebSocket-Accept` for `key`: base64 of SHA-1(key + GUID).
    public static func acceptValue(for key: String, sha1: ([UInt8]) -> [UInt8]) -> String {
        Base64.encode(sha1(Array((key + guid).utf8)))
    }

    /// The 101 response that completes the handshake, naming `subprotocol` when the server chose one.
    public static func response(key: String, subprotocol: String? = nil, sha1: ([UInt8]) -> [UInt8]) -> [UInt8] {
        let chosen = subprotocol.map { "Sec-WebSocket-Protocol: \($0)\r\n" } ?? ""
        return Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                      "Sec-WebSocket-Accept: \(acceptValue(for: key, sha1: sha1))\r\n\(chosen)\r\n").utf8)
    }

    /// The subprotocol this server speaks: a browser, which cannot set `Authorization`, offers
    /// `Sec-WebSocket-Protocol: fanout, bearer.<token>` and the server answers `fanout` (never the token).
    public static let subprotocol = "fanout"

    /// From the offered subprotocols: whether `fanout` is among them (the 101 must then name it: a browser
    /// fails a connection whose answer names none it offered, or one it did not), and the token of a
    /// `bearer.<token>` entry. Cost: one pass over the header (at most the request head's size).
    public static func offeredSubprotocols(_ head: HTTPRequestHead) -> (speaksFanout: Bool, token: String?) {
        guard let value = head.header("sec-websocket-protocol") else { return (false, nil) }
        var speaksFanout = false
        var token: String?
        for entry in value.split(separator: ",") {
            let name = entry.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
            let text = String(name)
            if text == subprotocol { speaksFanout = true }
            if text.hasPrefix("bearer."), text.count > 7, token == nil { token = String(text.dropFirst(7)) }
        }
        return (speaksFanout, token)
    }

    /// The refusal as an HTTP response.
    public static func response(_ refusal: Refusal) -> HTTPResponse {
        HTTPResponse(status: refusal.status, headers: refusal.headers.map { line in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), String(parts[1].dropFirst()))
        }, body: Array((refusal.reason + "\n").utf8))
    }
}
