import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP server on the loop (libevent's evhttp), for metrics and health checks.
public final class HTTPServer {
    /// An answer to one request.
    public struct Response {
        public var status: Int32
        public var contentType: String
        public var body: [UInt8]

        public init(status: Int32, contentType: String = "text/plain; charset=utf-8", body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    /// Strong: the event_base must outlive the evhttp made from it.
    private let loop: EventLoop
    private let http: OpaquePointer
    private let handler: (_ path: String) -> Response
    public let address: String

    /// Listens on `host:port` and answers every GET with `handler(path)`.
    public init(loop: EventLoop, address: SocketAddress, handler: @escaping (_ path: String) -> Response) throws(SystemError) {
        self.loop = loop
        self.handler = handler
        http = try nonNull("evhttp_new") { evhttp_new(loop.base) }
        evhttp_set_timeout(http, 10)
        evhttp_set_max_headers_size(http, 8192)
        evhttp_set_max_body_size(http, 0)
        evhttp_set_allowed_methods(http, UInt16(EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_HEAD.rawValue))
        guard let handle = evhttp_bind_socket_with_handle(http, address.host, UInt16(address.port)) else {
            evhttp_free(http)
            throw SystemError(errno: errno, operation: "listen on \(address) for HTTP")
        }
        let fd = evhttp_bound_socket_get_fd(handle)
        self.address = SocketAddress.local(of: fd)?.description ?? address.description
        // Unretained: the owner keeps the server alive, and deinit frees the evhttp (and its callbacks) first.
        evhttp_set_gencb(http, { request, context in
            guard let request, let context else { return }
            Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().answer(request)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        evhttp_free(http)
    }

    private func answer(_ request: OpaquePointer) {
        let uri = evhttp_request_get_uri(request).map { String(cString: $0) } ?? "/"
        let path = String(uri.prefix { $0 != "?" })
        let response = handler(path)
        evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type", response.contentType)
        let body = evbuffer_new()
        response.body.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { evbuffer_add(body, base, bytes.count) }
        }
        let reason = response.status == 200 ? "OK" : (response.status == 404 ? "Not Found" : "Service Unavailable")
        evhttp_send_reply(request, response.status, reason, body)
        evbuffer_free(body)
    }
}
