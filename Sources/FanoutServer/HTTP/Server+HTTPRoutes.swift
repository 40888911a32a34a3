import FanoutEventLoop
import FanoutHTTP

extension Server {
    /// Answers one complete request. Query strings are never logged: `?token=` may be in them.
    func route(_ head: HTTPRequestHead, body: [UInt8], exchange: HTTPExchange) {
        let isRead = head.method == "GET" || head.method == "HEAD"
        switch head.path {
        case "/" where isRead:
            exchange.finish(HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", headers: [
                ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"),
                ("Referrer-Policy", "no-referrer"),
            ], body: consolePage()), headOnly: head.method == "HEAD")
        case "/metrics" where isRead:
            exchange.finish(metricsResponse(), headOnly: head.method == "HEAD")
        case "/groups" where isRead:
            exchange.finish(groupsResponse(head, exchange: exchange), headOnly: head.method == "HEAD")
        case "/healthz" where isRead:
            exchange.finish(healthResponse(), headOnly: head.method == "HEAD")
        case "/ws":
            upgradeToWebSocket(head, exchange: exchange)
        case "/events" where isRead:
            openEventStream(head, exchange: exchange)
        case let path where path.hasPrefix("/publish/"):
            publishOverHTTP(head, body: body, exchange: exchange)
        case "/metrics", "/healthz", "/groups":
            exchange.finish(HTTPResponse(status: 405, headers: [("Allow", "GET, HEAD")], body: Array("use GET\n".utf8)))
        default:
            exchange.finish(HTTPResponse(status: 404, text: "not found: try /, /ws, /events, /publish/<subject>, /groups, /metrics or /healthz\n"))
        }
    }
}
