@_spi(Bench) import FanoutEventLoop

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

/// Gives up a peer's connection to a sink or a pump: its fd, and `unread` (what the peer read past its last
/// reply) followed by what the socket still held. Nothing reaches the peer from the socket again, and
/// `socket` is nil after. Nil when the peer has no connection.
func releasePeerSocket(_ socket: inout BufferedSocket?, unread: [UInt8] = []) -> (fd: Int32, unread: [UInt8])? {
    guard let held = socket else { return nil }
    held.delegate = nil
    socket = nil
    let released = held.releaseDescriptor()
    return (released.fd, unread + released.unread)
}

/// The input buffer of a connection taken over from a peer (by a sink, a pump or a request/reply peer):
/// `capacity` bytes, beginning with `unread`, what the handshake read past its last reply (cut at `capacity`),
/// and how much of it that fills. The caller deallocates it.
func takenOverInput(_ unread: [UInt8], capacity: Int) -> (buffer: UnsafeMutableRawBufferPointer, filled: Int) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    let carried = min(unread.count, capacity)
    unread.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(carried))) }
    return (buffer, carried)
}

/// A connection taken over from a peer that both reads and writes (`PublishPump`, `RawConnection`): it reads
/// when the socket is readable, and sends what waits once the kernel has room again after a partial send.
protocol TakenOverConnection: AnyObject {
    func readable()
    func writable()
}

/// Starts reading `stream` for `connection`, which holds it (hence unowned). Generic, so that each connection's
/// callbacks are direct calls.
func startReading<Connection: TakenOverConnection>(_ stream: RawStream, for connection: Connection) {
    stream.onReadable = { [unowned connection] in connection.readable() }
    stream.onWritable = { [unowned connection] in connection.writable() }
    stream.startReading()
}
