import FanoutEventLoop

/// The connecting socket every peer of the load generator opens the same way: to `address`, reporting to
/// `delegate`, reading from the start. Nil, with `failed` told why, when it cannot be made.
func openPeerSocket(loop: EventLoop, address: SocketAddress, delegate: BufferedSocketDelegate,
                    failed: (String) -> Void) -> BufferedSocket? {
    do {
        let socket = try BufferedSocket(loop: loop, connectingTo: address)
        socket.delegate = delegate
        socket.enableReading()
        return socket
    } catch {
        failed("cannot connect to \(address): \(error.reason)")
        return nil
    }
}
