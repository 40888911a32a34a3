import FanoutEventLoop
import FanoutHTTP

/// One HTTP connection until its request is answered or upgraded: reads the head (and a publish's body)
/// with `HTTPRequestParser`, then hands the request to the front's routes.
///
/// Bounded: the head may take `maxHeadBytes`, a body `max_payload` (counted toward max_memory at its announced
/// length from its head on, as a BPUB's payload is: 503 when the server is at the bound), and the whole request
/// `http_request_timeout` (a slowloris client that trickles its headers is closed with 408 then). One request per connection:
/// every answer closes, which keeps this side simple and costs browsers nothing they notice at this rate.
final class HTTPExchange: BufferedSocketDelegate {
    let id: UInt64
    let peer: SocketAddress
    private(set) var socket: BufferedSocket?
    /// A head may carry a 32 KiB application token (`Authorization: Bearer`, `?token=` or the WebSocket
    /// subprotocol) beside a browser's usual headers: `maxHeadBytes` bytes at most, of which those past
    /// `uncountedHeadBytes` are counted toward max_memory while the head is read (`headReserved`), so that many
    /// slow clients sending long heads cannot hold more than the bound.
    static let maxHeadBytes = 40 * 1024
    static let uncountedHeadBytes = 8 * 1024
    private var parser = HTTPRequestParser(maxHeadBytes: HTTPExchange.maxHeadBytes)
    /// What a long head holds past `uncountedHeadBytes`, counted by `MemoryGuard.reserveHeld` until it ends.
    private var headReserved = 0
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// The body's announced length, counted toward max_memory (`MemoryGuard.reserveHeld`) until the exchange ends.
    private var reserved = 0
    private var deadline: LoopTimer?
    /// The page origin every answer names in `Access-Control-Allow-Origin` (an allowed Origin on a CORS route;
    /// at most `OriginPolicy.maxLength` bytes, as parsed).
    var allowedOrigin: String?
    /// The front owns the exchange (`HTTPFront.exchanges`) and outlives it.
    unowned let front: HTTPFront

    init(id: UInt64, peer: SocketAddress, socket: BufferedSocket, front: HTTPFront) {
        self.id = id
        self.peer = peer
        self.socket = socket
        self.front = front
        let limit = front.host.configuration.timeouts.httpRequestTimeout
        let timer = LoopTimer(loop: front.loop) { [unowned self] in
            self.finish(HTTPResponse(status: 408, text: "request not received within http_request_timeout\n"))
        }
        timer.schedule(after: limit)
        deadline = timer
    }

    func socketDidRead(_ socket: BufferedSocket) {
        var ready = false
        socket.readInput { chunk in
            guard self.socket != nil, !ready else { return 0 }
            if head == nil {
                switch parser.feed(chunk) {
                case .incomplete:
                    if parser.bufferedCount > Self.uncountedHeadBytes && headReserved == 0 {
                        let length = Self.maxHeadBytes - Self.uncountedHeadBytes
                        guard front.host.memory.reserveHeld(length) else {
                            finish(.json(status: 503, HTTPRefusal.errorJSON(code: "limit",
                                "the server is at max_memory=\(front.host.configuration.limits.maxMemory): "
                                + "a request head over \(Self.uncountedHeadBytes) bytes cannot be held now")))
                            return chunk.count
                        }
                        headReserved = length
                    }
                    return chunk.count
                case .invalid(let status, let reason):
                    finish(HTTPResponse(status: status, text: reason + "\n"))
                    return chunk.count
                case .complete(let parsed, let consumed):
                    releaseHead()
                    let limits = front.host.configuration.limits
                    if parsed.contentLength > limits.maxPayload {
                        finish(.json(status: 413, HTTPRefusal.errorJSON(code: "too-long",
                            "body exceeds max_payload=\(limits.maxPayload) bytes")))
                        return chunk.count
                    }
                    if parsed.contentLength > 0 && !front.host.memory.reserveHeld(parsed.contentLength) {
                        finish(.json(status: 503, HTTPRefusal.errorJSON(code: "limit",
                            "the server is at max_memory=\(limits.maxMemory): a body of "
                            + "\(parsed.contentLength) bytes cannot be held now")))
                        return chunk.count
                    }
                    reserved = parsed.contentLength
                    // Exactly the announced size, made once: what is counted is what is held.
                    body.reserveCapacity(parsed.contentLength)
                    head = parsed
                    ready = parsed.contentLength == 0
                    // An upgrade's frames stay in the input for the WebSocket connection to read.
                    if ready { return consumed }
                    let take = min(parsed.contentLength, chunk.count - consumed)
                    body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[consumed..<consumed + take]))
                    ready = body.count == parsed.contentLength
                    return consumed + take
                }
            }
            let wanted = head!.contentLength - body.count
            let take = min(wanted, chunk.count)
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<take]))
            ready = body.count == head!.contentLength
            return take
        }
        guard ready, let head, self.socket != nil else { return }
        deadline = nil
        socket.disableReading()
        front.route(head, body: body, exchange: self)
    }

    func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd) {
        close()
    }

    /// An HTTPS connection's TLS handshake finished (libevent reports it as "connected" on this side too).
    func socketDidConnect(_ socket: BufferedSocket) {
        front.handshakeFinished(self)
    }

    /// Sends `response` and closes once it is flushed.
    func finish(_ response: HTTPResponse, headOnly: Bool = false) {
        guard let socket else { return }
        var response = response
        // Errors too: the page can read why it was refused.
        if let allowedOrigin {
            response.headers += [("Access-Control-Allow-Origin", allowedOrigin), ("Vary", "Origin")]
        }
        socket.write(response.encoded(head: headOnly))
        socket.closeGracefully(within: front.host.configuration.timeouts.shutdownGrace)
        self.socket = nil
        close()
    }

    /// Hands the socket to whoever takes the connection over (a WebSocket, an event stream); the exchange ends.
    func takeSocket() -> BufferedSocket? {
        let taken = socket
        socket?.delegate = nil
        socket = nil
        close()
        return taken
    }

    /// Leaves the front's table; the socket, if still held, closes with the exchange.
    func close() {
        deadline = nil
        releaseHead()
        if reserved > 0 {
            front.host.memory.releaseHeld(reserved)
            // A body cut off before its end: what arrived is counted, so that the memory goes back to the system.
            if body.count < reserved { front.host.memory.noteFreed(body.count) }
            reserved = 0
        }
        front.exchangeEnded(self)
    }

    /// The head is read (or the exchange ends): its count toward max_memory goes back.
    private func releaseHead() {
        guard headReserved > 0 else { return }
        front.host.memory.releaseHeld(headReserved)
        headReserved = 0
    }
}
