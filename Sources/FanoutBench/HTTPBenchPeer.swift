@_spi(Bench) import FanoutEventLoop

/// What the subscribers that reach fanoutd through its HTTP listener (WebSocket, Server-Sent Events) share:
/// the connection, the step waiting for its answer, and handing the connection over to a `DeliverySink`.
/// Subclasses speak their transport in `socketDidConnect`, `socketDidRead` and their `subscribe`, and name
/// their `wireFormat`, which makes them `BenchPeer`s. Runs on the benchmark's loop thread.
public class HTTPBenchPeer: BufferedSocketDelegate {
    let loop: EventLoop
    let address: SocketAddress
    let token: String?
    var socket: BufferedSocket?
    /// The step under way (connecting, subscribing), told nil when done or why not.
    var pending: ((String?) -> Void)?

    init(loop: EventLoop, address: SocketAddress, token: String?) {
        self.loop = loop
        self.address = address
        self.token = token
    }

    public var onFailure: ((String) -> Void)?

    public func connect(_ done: @escaping (String?) -> Void) {
        pending = done
        socket = openPeerSocket(loop: loop, address: address, delegate: self) { reason in
            pending = nil
            done(reason)
        }
    }

    public func stall() { socket?.disableReading() }

    public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        releasePeerSocket(&socket)
    }

    public func close() { socket = nil }

    public func socketDidConnect(_ socket: BufferedSocket) {}

    public func socketDidRead(_ socket: BufferedSocket) {}

    public func socketDidDrain(_ socket: BufferedSocket) {}

    /// Ends the step under way.
    func finish(_ error: String?) {
        let done = pending
        pending = nil
        done?(error)
    }

    public func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd) {
        if pending != nil { finish("connection ended: \(reason)") } else { onFailure?("connection ended: \(reason)") }
    }
}
