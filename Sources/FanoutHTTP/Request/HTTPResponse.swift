/// An answer to one request, encoded whole (status line, headers, body) for one write.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = [("Content-Type", contentType)] + headers
        self.body = body
    }

    public init(status: Int, text: String) {
        self.init(status: status, body: Array(text.utf8))
    }

    /// A JSON body (already encoded).
    public static func json(status: Int, _ json: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", headers: headers, body: Array((json + "\n").utf8))
    }

    /// The bytes on the wire; `head` true leaves the body out (HEAD) but keeps its length.
    public func encoded(head: Bool = false, keepAlive: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        // 204 has no body, and no length (RFC 9110, 8.6).
        if status != 204 { text += "Content-Length: \(body.count)\r\n" }
        text += keepAlive ? "\r\n" : "Connection: close\r\n\r\n"
        var out = Array(text.utf8)
        if !head { out.append(contentsOf: body) }
        return out
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 101: "Switching Protocols"
        case 200: "OK"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
