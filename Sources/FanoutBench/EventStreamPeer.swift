@_spi(Bench) import FanoutEventLoop

/// A subscriber that reaches fanoutd through Server-Sent Events (`GET /events?subject=...` on its HTTP
/// listener): connected, it asks for its subject's stream, and once the stream's headers and its RESUME's
/// reply (a comment) are in, hands its connection to a `DeliverySink`, which then counts `data:` lines.
/// Runs on the benchmark's loop thread.
public final class EventStreamPeer: HTTPBenchPeer, BenchPeer {
    private var input: [UInt8] = []

    override public init(loop: EventLoop, address: SocketAddress, token: String?) {
        super.init(loop: loop, address: address, token: token)
    }

    public var wireFormat: WireFormat { .eventStream }

    /// There is no greeting: the request is made with the subject, in `subscribe`.
    override public func socketDidConnect(_ socket: BufferedSocket) { finish(nil) }

    public func subscribe(_ subject: String, _ done: @escaping (String?) -> Void) {
        pending = done
        var request = "GET /events?subject=\(subject) HTTP/1.1\r\nHost: \(address)\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        socket?.write(request + "\r\n")
    }

    override public func socketDidRead(_ socket: BufferedSocket) {
        socket.readInput { chunk in
            input.append(contentsOf: chunk)
            return chunk.count
        }
        guard pending != nil else { return }
        let text = String(decoding: input, as: UTF8.self)
        if text.hasPrefix("HTTP/1.1 "), !text.hasPrefix("HTTP/1.1 200") {
            return finish("stream refused: \(text.prefix(80))")
        }
        // The RESUME reply comes as a comment; what follows it is the stream's, for the sink.
        guard let reply = text.firstRange(of: "\n: +OK"),
              let end = text[reply.upperBound...].firstIndex(of: "\n") else {
            return
        }
        let used = text.utf8.distance(from: text.startIndex, to: end) + 1
        socket.prependInput(Array(input[used...]))
        input = []
        finish(nil)
    }
}
