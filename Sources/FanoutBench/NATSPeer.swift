@_spi(Bench) import FanoutEventLoop

/// A peer speaking core NATS (the text protocol of nats-server: `INFO`, `CONNECT`, `SUB`, `PUB`, `MSG`, `PING`),
/// so that Fanout's 1.2 shapes (groups, request/reply) can be run against a nats-server in the same run.
///
/// It connects with `"verbose":true`: the server then answers every `PUB` with `+OK`, which a `PublishPump`'s
/// window counts as it counts Fanout's `+OK <receivers>`, and which costs the server what Fanout's reply does.
public final class NATSPeer: ServerPeer, BenchPeer {
    /// The queue group that `subscribe` joins, or nil for plain subscriptions.
    private let group: String?
    private var input: [UInt8] = []
    private var greeted = false
    private var nextSID = 1

    public init(loop: EventLoop, address: SocketAddress, group: String? = nil) {
        self.group = group
        super.init(loop: loop, address: address, name: "nats")
    }

    /// `SUB <subject> [<group>] <sid>` then `PING`: NATS confirms a subscription only by answering a later
    /// `PING`, since the server handles a connection's lines in order.
    public func subscribe(_ subject: String, _ done: @escaping (String?) -> Void) {
        subscribeWaiters.append(done)
        let queue = group.map { " \($0)" } ?? ""
        socket?.write("SUB \(subject)\(queue) \(nextSID)\r\nPING\r\n")
        nextSID += 1
    }

    public var wireFormat: WireFormat { .nats }

    public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        releasePeerSocket(&socket, unread: input)
    }

    override public func socketDidConnect(_ socket: BufferedSocket) {
        socket.disableNagle()
    }

    override public func socketDidRead(_ socket: BufferedSocket) {
        socket.readInput { chunk in
            input.append(contentsOf: chunk)
            return chunk.count
        }
        // Setup lines only (INFO, +OK, PONG, PING, -ERR): deliveries are read by a sink once released.
        while let newline = input.firstIndex(of: 0x0A) {
            let line = String(decoding: input[..<newline], as: UTF8.self)
                .trimmingSuffix { $0 == "\r" }
            input.removeSubrange(...newline)
            if line.hasPrefix("INFO ") && !greeted {
                greeted = true
                socket.write(#"CONNECT {"verbose":true,"pedantic":false,"echo":false,"protocol":1}"# + "\r\n")
                connectDone?(nil)
                connectDone = nil
            } else if line == "PONG" {
                if !subscribeWaiters.isEmpty { subscribeWaiters.removeFirst()(nil) }
            } else if line == "PING" {
                socket.write("PONG\r\n")
            } else if line.hasPrefix("-ERR") {
                let waiter = subscribeWaiters.isEmpty ? nil : subscribeWaiters.removeFirst()
                if let waiter { waiter(line) } else { onFailure?("nats: \(line)") }
            }
        }
    }
}

extension String {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var text = self
        while let last = text.last, predicate(last) { text.removeLast() }
        return text
    }
}
