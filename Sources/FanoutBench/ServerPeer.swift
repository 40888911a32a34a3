@_spi(Bench) import FanoutEventLoop

/// What the peers of the other servers a run compares with (`NATSPeer`, `RedisPeer`) share: the socket and its
/// connect, the subscriptions waiting for their confirmation, stalling, closing, and the end of the connection,
/// told as `<name> connection lost`. Subclasses speak their protocol in `socketDidConnect`, `socketDidRead` and
/// their `subscribe`, and name their `wireFormat`, which makes them `BenchPeer`s. Runs on the benchmark's loop
/// thread.
public class ServerPeer: BufferedSocketDelegate {
    let loop: EventLoop
    let address: SocketAddress
    /// `nats` or `redis`: whose connection was lost.
    private let name: String
    var socket: BufferedSocket?
    var connectDone: ((String?) -> Void)?
    /// Subscriptions waiting for the server's confirmation, in order.
    var subscribeWaiters: [(String?) -> Void] = []
    public var onFailure: ((String) -> Void)?

    init(loop: EventLoop, address: SocketAddress, name: String) {
        self.loop = loop
        self.address = address
        self.name = name
    }

    public func connect(_ done: @escaping (String?) -> Void) {
        connectDone = done
        socket = openPeerSocket(loop: loop, address: address, delegate: self, failed: done)
    }

    public func stall() {
        socket?.delegate = nil
        socket?.disableReading()
    }

    public func close() {
        socket?.delegate = nil
        socket = nil
    }

    public func socketDidConnect(_ socket: BufferedSocket) {}

    public func socketDidRead(_ socket: BufferedSocket) {}

    public func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd) {
        if let connectDone {
            self.connectDone = nil
            connectDone("cannot connect to \(address): \(reason)")
        } else {
            onFailure?("\(name) connection lost: \(reason)")
        }
    }
}
