import FanoutEventLoop
import FanoutHTTP
import FanoutProtocol

extension HTTPFront {
    /// Answers one complete request. Query strings are never logged: `?token=` may be in them.
    func route(_ head: HTTPRequestHead, body: [UInt8], exchange: HTTPExchange) {
        let isRead = head.method == "GET" || head.method == "HEAD"
        if Self.isBrowserRoute(head.path), !admitOrigin(head, exchange: exchange) { return }
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
        case let path where head.method == "OPTIONS" && path != "/ws" && Self.isBrowserRoute(path):
            exchange.finish(preflightResponse(head))
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

    /// The console page for the listeners bound now: plain ones in the order `listen` names them.
    func consolePage() -> [UInt8] {
        let listening = host.listening
        let plain = listening.inherited.map(\.address)
            + host.configuration.listeners.listen.compactMap { listening.plain[$0]?.address }
        let tls = host.configuration.tls.listen.compactMap { listening.tls[$0]?.address }
        return ConsoleConnectHint.page(ConsoleConnectHint.hint(plain: plain, tls: tls))
    }

    func metricsResponse() -> HTTPResponse {
        host.metrics?.sync(from: host)
        return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                            body: host.metricsExposition?() ?? [])
    }

    func healthResponse() -> HTTPResponse {
        host.lifecycle.isShuttingDown ? HTTPResponse(status: 503, text: "shutting down\n")
            : HTTPResponse(status: 200, text: "ok\n")
    }

    /// `GET /groups`: each group and the pattern it holds, with its live members, for the console's subjects
    /// table: `{"total":n,"groups":[{"pattern":..,"group":..,"members":n},...]}`, at most `listingLimit`.
    /// On a server with users it takes a token (`Authorization: Bearer`, or `?token=`) of a user who may list
    /// channels, as CHANNELS does.
    func groupsResponse(_ head: HTTPRequestHead, exchange: HTTPExchange) -> HTTPResponse {
        let settings = host.configuration.auth
        if settings.requiresAuth {
            let token = Self.bearerToken(head) ?? head.queryValues("token").first
            switch host.auth.httpGrant(token: token, peerHost: exchange.peer.host) {
            case .failure(let refusal): return refusal.response
            case .success(let granted):
                if settings.adminCommands.contains("CHANNELS"), !granted.grant.permissions.admin {
                    return HTTPRefusal(status: 403, code: "denied", "listing groups needs an admin user").response
                }
            }
        }
        let listing = host.index.groupListing(limit: Admin.listingLimit)
        let entries = listing.sets.map { set in
            "{\"pattern\":\(JSONText.quoted(set.pattern)),\"group\":\(JSONText.quoted(set.group)),\"members\":\(set.members)}"
        }
        return .json(status: 200, "{\"total\":\(listing.total),\"groups\":[\(entries.joined(separator: ","))]}")
    }
}
