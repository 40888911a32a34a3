import FanoutEventLoop

/// The server's HTTP side, on its event loop: a table of routes by path over libevent's evhttp. It serves
/// `/metrics` and `/healthz` today; the browser transports (WebSocket, Server-Sent Events, the console page)
/// join it as more routes.
public final class HTTPFront {
    /// What answers one path: called on the loop thread for each GET or HEAD of it.
    public typealias Route = () -> HTTPServer.Response

    private let server: HTTPServer
    /// Paths served, exactly as requested (the query string is not part of the path).
    private let routes: [String: Route]

    /// Listens on `address` and serves `routes`; any other path is a 404 that names the served ones.
    public init(loop: EventLoop, address: SocketAddress, routes: [String: Route]) throws(SystemError) {
        self.routes = routes
        let known = routes.keys.sorted().joined(separator: " or ")
        server = try HTTPServer(loop: loop, address: address) { path in
            guard let route = routes[path] else {
                return HTTPServer.Response(status: 404, body: Array("not found: try \(known)\n".utf8))
            }
            return route()
        }
    }

    /// The address listened on, with the kernel's port where port 0 was asked for.
    public var address: String { server.address }
}
