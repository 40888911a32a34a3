import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking TCP socket with input and output buffers (libevent's `bufferevent`).
///
/// Ownership: whoever holds the socket keeps it open; dropping the last reference frees the bufferevent and
/// closes the fd, discarding unsent output. To send a last line first, call `closeGracefully(within:)`,
/// which hands ownership to the loop until the peer has that line or the deadline passes
/// (see `BufferedSocket+Linger.swift`).
///
/// Writing lives in `BufferedSocket+DirectWrites.swift`, socket options in `BufferedSocket+Options.swift`.
public final class BufferedSocket {
    // A server holds one per client, idle or not. The fields are declared in this order, word-sized ones
    // first, then `fd` and `flushSlot`, then the one-byte flags, so that the object takes 88 bytes: glibc's
    // 96-byte chunks, where any other order leaves padding that takes it to the 112- or 128-byte ones.

    let bev: OpaquePointer
    /// The bufferevent's output buffer, which lives as long as it does: looked up once, not per write.
    let output: OpaquePointer
    /// Strong: the event_base must outlive the bufferevent made from it, whatever order owners let go in.
    let loop: EventLoop
    /// Told about reads, drains and the end. Weak: the delegate owns the socket, not the other way round.
    public weak var delegate: BufferedSocketDelegate?
    /// Ends a graceful close at its deadline (BufferedSocket+Linger.swift).
    var lingerTimer: LoopTimer?
    /// A direct write that leaves this much output or less tells the delegate (BufferedSocket+DirectWrites.swift).
    var writeLowWatermark = 0
    /// The socket's descriptor (-1 once released); kept here because asking the bufferevent for it takes
    /// an indirect call and its lock on every direct write.
    public private(set) var fd: Int32 = -1
    /// This socket's index in the loop's `pendingFlush`, while it is there.
    var flushSlot: Int32?
    /// Whether this socket speaks TLS (a half-close would cut its close_notify short).
    public let isTLS: Bool

    // Direct writes (BufferedSocket+DirectWrites.swift).

    /// Plain sockets write directly, once per loop pass (`flushQueued`), and arm the bufferevent's write
    /// event only for output the kernel did not take. TLS sockets leave writing to the bufferevent.
    let writesDirectly: Bool
    /// Whether the bufferevent's write event is enabled: during a connect, after a partial direct write,
    /// and while lingering. Direct writes wait for it to drain, so output keeps its order.
    var writeEventArmed = false
    /// Whether a direct write that brings the output down to its low-water mark tells the delegate, as the
    /// bufferevent's own writes always do. An owner that may never wait for a drain turns this off, and on
    /// again the first time it does: the call goes through a weak reference, and that costs more than the
    /// rest of a small write's bookkeeping.
    public var reportsDirectDrains = true

    // Graceful close (BufferedSocket+Linger.swift).

    public internal(set) var isLingering = false
    var peerClosed = false
    var halfClosed = false

    /// Wraps an accepted (or otherwise connected) fd, which the socket now owns; with `tls`, as the server
    /// side of a TLS connection (the handshake runs as data flows).
    public convenience init(loop: EventLoop, fd: Int32, tls: TLSContext? = nil) throws(SystemError) {
        try self.init(loop: loop, fd: fd, tls: tls, side: .server)
    }

    /// Starts an outgoing connection; the delegate hears `socketDidConnect` or `didEnd`. With `tls`, the
    /// server's certificate must be valid for `serverName`.
    public convenience init(
        loop: EventLoop, connectingTo address: SocketAddress, tls: TLSContext? = nil, serverName: String? = nil
    ) throws(SystemError) {
        try self.init(loop: loop, fd: -1, tls: tls, side: .client(serverName: serverName))
        // The connect arms the write event by itself; direct writes wait for `socketDidConnect`.
        writeEventArmed = writesDirectly
        _ = try address.withSockaddr { (sockaddr, length) throws(SystemError) in
            try syscall("connect to \(address)") {
                bufferevent_socket_connect(bev, UnsafeMutablePointer(mutating: sockaddr), length)
            }
        }
        fd = bufferevent_getfd(bev)
    }

    /// Which end of a TLS connection this socket is: it decides the handshake's direction and what is verified.
    private enum Side {
        case server
        /// Verifies the server's certificate against `serverName` when given.
        case client(serverName: String?)
    }

    /// The one place a bufferevent is made, for an fd (-1 until a connect sets one) that the socket then owns.
    private init(loop: EventLoop, fd: Int32, tls: TLSContext?, side: Side) throws(SystemError) {
        self.loop = loop
        isTLS = tls != nil
        writesDirectly = tls == nil
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        if let tls {
            let ssl: OpaquePointer
            let state: bufferevent_ssl_state
            switch side {
            case .server:
                ssl = try tls.makeSSL(verifying: nil)
                state = BUFFEREVENT_SSL_ACCEPTING
            case .client(let serverName):
                ssl = try tls.makeSSL(verifying: serverName)
                state = BUFFEREVENT_SSL_CONNECTING
            }
            bev = try nonNull("bufferevent_openssl_socket_new") {
                tls.openSSL.bufferevent_openssl_socket_new!(loop.base, fd, ssl, state, options)
            }
            // A peer that closes without close_notify has simply left: a line protocol has nothing to truncate.
            tls.openSSL.bufferevent_openssl_set_allow_dirty_shutdown!(bev, 1)
        } else {
            bev = try nonNull("bufferevent_socket_new") { bufferevent_socket_new(loop.base, fd, options) }
        }
        output = bufferevent_get_output(bev)
        if writesDirectly {
            // bufferevent_socket_new watches its output so that data added while writing is enabled but the
            // write event idle starts the event. Here the event is enabled only with output pending, and it
            // stays pending until the output drains, when `handleDrained` disables it: the watch never has
            // anything to do. Without it each socket saves libevent's 40-byte callback entry (48 with
            // malloc's), and each write and drain of the output a call through it.
            evbuffer_setcb(output, nil, nil)
        }
        self.fd = fd
        installCallbacks()
        if isTLS, case .server = side { loop.handshakeBegan(self) }
    }

    deinit {
        // Leave the loop's flush list: unsent output goes with the socket.
        if let slot = flushSlot { loop.pendingFlush[Int(slot)] = nil }
        if isTLS { loop.handshakeEnded(self, done: false) }
        bufferevent_free(bev)
    }

    private func installCallbacks() {
        if writesDirectly {
            // Writes go through `flushQueued`; the write event is armed only when the kernel pushes back.
            // (A connect arms it by itself until the connection is up.)
            bufferevent_disable(bev, Int16(EV_WRITE))
        }
        // The socket's owner (or the loop, while lingering) keeps it alive, and deinit frees the bufferevent
        // (`CallbackContext`). The owner may drop the socket from inside a callback: each keeps it alive until
        // the call returns.
        bufferevent_setcb(bev, { _, context in
            let socket = CallbackContext<BufferedSocket>(context!).object
            withExtendedLifetime(socket) { socket.handleReadable() }
        }, { _, context in
            let socket = CallbackContext<BufferedSocket>(context!).object
            withExtendedLifetime(socket) { socket.handleDrained() }
        }, { _, what, context in
            let socket = CallbackContext<BufferedSocket>(context!).object
            withExtendedLifetime(socket) { socket.handleEvent(what) }
        }, CallbackContext(self).pointer)
    }

    // MARK: Reading

    public func enableReading() { bufferevent_enable(bev, Int16(EV_READ)) }
    public func disableReading() { bufferevent_disable(bev, Int16(EV_READ)) }

    /// Hands the unread input to `body` chunk by chunk, without copying. `body` returns how many bytes of the
    /// chunk it consumed; consumed bytes are drained, and returning less than the whole chunk stops the walk.
    public func readInput(_ body: (UnsafeRawBufferPointer) -> Int) {
        let input = bufferevent_get_input(bev)
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: 16) { vectors in
            while true {
                let count = Int(evbuffer_peek(input, -1, nil, vectors.baseAddress, 16))
                if count == 0 { return }
                var consumed = 0
                var stopped = false
                for vector in vectors.prefix(min(count, 16)) {
                    let chunk = UnsafeRawBufferPointer(start: vector.iov_base, count: vector.iov_len)
                    let used = body(chunk)
                    consumed += used
                    if used < chunk.count { stopped = true; break }
                }
                evbuffer_drain(input, consumed)
                if stopped { return }
            }
        }
    }

    /// Reads what the kernel has for this socket into the input buffer, up to `limit` bytes, in large
    /// `recv` calls (libevent's own reads stop at 4 KiB, which splits pipelined input into many callbacks).
    /// Returns the bytes read. End of input and errors are left for libevent to see on its next read: the
    /// socket stays readable, so the delegate still hears about them in order.
    @discardableResult
    public func readAvailable(upTo limit: Int = 64 * 1024) -> Int {
        guard writesDirectly, !isLingering else { return 0 }
        let input = bufferevent_get_input(bev)
        // libevent reads min(FIONREAD, 4 KiB): less than that buffered means the kernel had no more, and a
        // recv would only say EAGAIN.
        guard evbuffer_get_length(input) >= 4096 else { return 0 }
        let fd = self.fd
        var total = 0
        // A bufferevent keeps its input's end frozen except while it reads itself; do as it does.
        evbuffer_unfreeze(input, 0)
        defer { evbuffer_freeze(input, 0) }
        while total < limit {
            let want = min(64 * 1024, limit - total)
            var vector = iovec()
            guard evbuffer_reserve_space(input, want, &vector, 1) == 1 else { break }
            let got = recv(fd, vector.iov_base, min(vector.iov_len, want), Int32(MSG_DONTWAIT))
            guard got > 0 else {
                evbuffer_commit_space(input, nil, 0)
                break
            }
            vector.iov_len = got
            evbuffer_commit_space(input, &vector, 1)
            total += got
            if got < want { break }
        }
        return total
    }

    // MARK: Handing the descriptor over

    /// Hands the connection's fd over to the caller, with the input read but not yet consumed, and leaves
    /// this socket empty: freeing it no longer closes the fd. Queued output is dropped, so call it once
    /// everything sent has been answered (a load generator's subscriber does, after its SUB's reply).
    @_spi(Bench) public func releaseDescriptor() -> (fd: Int32, unread: [UInt8]) {
        var unread: [UInt8] = []
        readInput { chunk in
            unread.append(contentsOf: chunk)
            return chunk.count
        }
        let released = fd
        bufferevent_disable(bev, Int16(EV_READ | EV_WRITE))
        bufferevent_setfd(bev, -1)
        fd = -1
        return (released, unread)
    }

    // MARK: Callbacks

    private func handleReadable() {
        if isLingering {
            let input = bufferevent_get_input(bev)
            evbuffer_drain(input, evbuffer_get_length(input))
            return
        }
        delegate?.socketDidRead(self)
    }

    private func handleDrained() {
        if isLingering {
            if outputCount == 0 { halfClose() }
            return
        }
        if writesDirectly && writeEventArmed && outputCount == 0 {
            // Back to direct writes until the kernel pushes back again.
            writeEventArmed = false
            bufferevent_disable(bev, Int16(EV_WRITE))
        }
        delegate?.socketDidDrain(self)
    }

    private func handleEvent(_ what: Int16) {
        let flags = Int32(what)
        if flags & BEV_EVENT_CONNECTED != 0 {
            if isTLS { loop.handshakeEnded(self, done: true) }
            if writesDirectly {
                writeEventArmed = false
                if outputCount > 0 { queueFlush() }
            }
            delegate?.socketDidConnect(self)
            return
        }
        let reason: SocketEnd
        if flags & BEV_EVENT_EOF != 0 {
            reason = .eof
        } else if flags & BEV_EVENT_TIMEOUT != 0 {
            reason = flags & BEV_EVENT_READING != 0 ? .readTimeout : .writeTimeout
        } else if isTLS, let openSSL = try? OpenSSL.functions(),
                  case let code = openSSL.bufferevent_get_openssl_error!(bev), code != 0 {
            reason = .tls(TLSContext.lastError(openSSL, code: code))
        } else {
            reason = .error(errno: errno)
        }
        if isLingering {
            peerClosed = true
            // EOF while our output is still draining: keep writing until done or the deadline.
            if reason == .eof && outputCount > 0 && !halfClosed { return }
            finishLingering()
            return
        }
        if reason == .eof { peerClosed = true }
        delegate?.socket(self, didEnd: reason)
    }
}
