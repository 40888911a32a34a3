import FanoutHTTP

extension HTTPFront {
    /// How long a browser may keep a preflight's answer: short, since http_allowed_origins is reloadable.
    static let preflightMaxAge = 600

    /// Whether `path` is a route a foreign page could use with the user's network position and cookies
    /// (a WebSocket, an event stream, a publish): these check the page's Origin before anything else.
    static func isBrowserRoute(_ path: String) -> Bool {
        path == "/ws" || path == "/events" || path.hasPrefix("/publish/")
    }

    /// Checks the request's Origin against http_allowed_origins (`OriginPolicy`) before any upgrade, stream or
    /// publish: a refused page gets 403 `denied`; an allowed one is named in the CORS headers of every answer to
    /// an event stream or a publish, errors included. Returns whether the request goes on.
    func admitOrigin(_ head: HTTPRequestHead, exchange: HTTPExchange) -> Bool {
        let policy = OriginPolicy(allowed: host.configuration.listeners.httpAllowedOrigins)
        switch policy.verdict(origin: head.header("origin"), host: head.header("host")) {
        case .noOrigin:
            return true
        case .allowed(let origin):
            // A WebSocket answers with 101, where CORS has no part.
            if head.path != "/ws" { exchange.allowedOrigin = origin }
            return true
        case .refused(let reason):
            exchange.finish(HTTPRefusal(status: 403, code: "denied", reason).response)
            return false
        }
    }

    /// The answer to a CORS preflight (`OPTIONS`) of an event stream or a publish from an allowed page (a
    /// refused one got 403 from `admitOrigin`): the method and the headers the route reads. No
    /// `Access-Control-Allow-Credentials`: tokens travel in `Authorization` or `?token=`, never in cookies.
    func preflightResponse(_ head: HTTPRequestHead) -> HTTPResponse {
        let isPublish = head.path.hasPrefix("/publish/")
        let methods = isPublish ? "POST" : "GET, HEAD"
        let headers = isPublish ? "Authorization, Content-Type" : "Authorization, Content-Type, Last-Event-ID"
        return HTTPResponse(status: 204, headers: [
            ("Allow", methods + ", OPTIONS"), ("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers", headers), ("Access-Control-Max-Age", String(Self.preflightMaxAge)),
        ], body: [])
    }
}
