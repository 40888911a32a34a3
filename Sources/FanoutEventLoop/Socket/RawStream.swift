import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// A connected socket read with plain `recv` and written with plain `send`, from and into the caller's own
/// memory, with no buffer layer in between: for a load generator's connections, which only count what
/// arrives and write prebuilt frames. Owns its fd. Bench SPI: not part of the public API.
@_spi(Bench) public final class RawStream {
    /// Strong: the event_base must outlive the event made from it.
    private let loop: EventLoop
    public let fd: Int32
    private var event: OpaquePointer?
    private var writeEvent: OpaquePointer?
    /// Called on the loop thread whenever the socket is readable (again and again until it is drained).
    public var onReadable: (() -> Void)?
    /// Called once on the loop thread after `waitUntilWritable`, when the socket can take more bytes.
    public var onWritable: (() -> Void)?

    /// Takes over `fd`, which must be connected; the stream closes it.
    public init(loop: EventLoop, fd: Int32) {
        self.loop = loop
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        // The stream's owner keeps it alive, and deinit frees both events (`CallbackContext`).
        event = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, _, context in
            let stream = CallbackContext<RawStream>(context!).object
            withExtendedLifetime(stream) { stream.onReadable?() }
        }, CallbackContext(self).pointer)
        writeEvent = event_new(loop.base, fd, Int16(EV_WRITE), { _, _, context in
            let stream = CallbackContext<RawStream>(context!).object
            withExtendedLifetime(stream) { stream.onWritable?() }
        }, CallbackContext(self).pointer)
    }

    deinit {
        if let event { event_free(event) }
        if let writeEvent { event_free(writeEvent) }
        Glibc.close(fd)
    }

    public func startReading() {
        if let event { event_add(event, nil) }
    }

    public func stopReading() {
        if let event { event_del(event) }
    }

    /// Calls `onWritable` once, when the kernel has room again after a partial `send`.
    public func waitUntilWritable() {
        if let writeEvent { event_add(writeEvent, nil) }
    }

    /// What one `receive` found.
    public enum Received: Equatable {
        case bytes(Int)
        /// Nothing to read now.
        case wouldBlock
        case end
        case failed(errno: Int32)
    }

    /// One `recv` into `buffer`, without blocking.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> Received {
        let got = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
        if got > 0 { return .bytes(got) }
        if got == 0 { return .end }
        let error = errno
        return Self.isRetryable(error) ? .wouldBlock : .failed(errno: error)
    }

    /// What one `send` did.
    public enum Sent: Equatable {
        /// This many bytes went to the kernel, which may be fewer than offered.
        case bytes(Int)
        /// The kernel has no room now.
        case wouldBlock
        case failed(errno: Int32)
    }

    /// One `send` of `bytes`, without blocking and without SIGPIPE.
    public func send(_ bytes: UnsafeRawBufferPointer) -> Sent {
        let sent = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        if sent >= 0 { return .bytes(sent) }
        let error = errno
        return Self.isRetryable(error) ? .wouldBlock : .failed(errno: error)
    }

    /// A non-blocking call that found nothing to do now, or was interrupted: try again on the next event.
    private static func isRetryable(_ error: Int32) -> Bool {
        error == EAGAIN || error == EWOULDBLOCK || error == EINTR
    }
}
