import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// Why a socket stopped: what the peer or the clock did.
public enum SocketEnd: Sendable, Equatable, CustomStringConvertible {
    /// The peer closed its side (read returned 0).
    case eof
    /// A read or write failed, usually ECONNRESET or EPIPE.
    case error(errno: Int32)
    /// No input arrived for the read timeout.
    case readTimeout
    /// Output could not be written for the write timeout.
    case writeTimeout
    /// The TLS layer failed (handshake, certificate, protocol), with OpenSSL's reason.
    case tls(String)

    public var description: String {
        switch self {
        case .eof: "eof"
        case .error(let errno) where errno == ECONNRESET || errno == EPIPE: "reset"
        case .error(let errno): "error (\(SystemError(errno: errno, operation: "socket").reason))"
        case .readTimeout: "read-timeout"
        case .writeTimeout: "write-timeout"
        case .tls(let reason): "tls: \(reason)"
        }
    }
}

/// What a `BufferedSocket` tells its owner. Called on the loop thread.
public protocol BufferedSocketDelegate: AnyObject {
    /// New input is in the socket's input buffer.
    func socketDidRead(_ socket: BufferedSocket)
    /// The output buffer drained to the write low-water mark (empty, unless one was set).
    func socketDidDrain(_ socket: BufferedSocket)
    /// The socket ended; no more callbacks follow for reading.
    func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd)
    /// An outgoing connection was established.
    func socketDidConnect(_ socket: BufferedSocket)
}

extension BufferedSocketDelegate {
    public func socketDidDrain(_ socket: BufferedSocket) {}
    public func socketDidConnect(_ socket: BufferedSocket) {}
}

/// A non-blocking TCP socket with input and output buffers (libevent's `bufferevent`).
///
/// Ownership: whoever holds the socket keeps it open; dropping the last reference frees the bufferevent and
/// closes the fd, discarding unsent output. To send a last line first, call `closeGracefully(within:)`,
/// which hands ownership to the loop until the output drains or the deadline passes.
public final class BufferedSocket {
    let bev: OpaquePointer
    /// The bufferevent's output buffer, which lives as long as it does: looked up once, not per write.
    private let output: OpaquePointer
    /// Strong: the event_base must outlive the bufferevent made from it, whatever order owners let go in.
    let loop: EventLoop
    /// Told about reads, drains and the end. Weak: the delegate owns the socket, not the other way round.
    public weak var delegate: BufferedSocketDelegate?
    private var lingerTimer: LoopTimer?
    private var peerClosed = false
    private var halfClosed = false
    /// Whether this socket speaks TLS (a half-close would cut its close_notify short).
    public let isTLS: Bool
    public private(set) var isLingering = false
    /// Plain sockets write directly, once per loop pass (`flushQueued`), and arm the bufferevent's write
    /// event only for output the kernel did not take. TLS sockets leave writing to the bufferevent.
    private let writesDirectly: Bool
    /// Whether the bufferevent's write event is enabled: during a connect, after a partial direct write,
    /// and while lingering. Direct writes wait for it to drain, so output keeps its order.
    private var writeEventArmed = false
    private var writeLowWatermark = 0
    /// This socket's index in the loop's `pendingFlush`, while it is there.
    var flushSlot: Int?

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
                bufferevent_openssl_socket_new(loop.base, fd, ssl, state, options)
            }
            // A peer that closes without close_notify has simply left: a line protocol has nothing to truncate.
            bufferevent_openssl_set_allow_dirty_shutdown(bev, 1)
        } else {
            bev = try nonNull("bufferevent_socket_new") { bufferevent_socket_new(loop.base, fd, options) }
        }
        output = bufferevent_get_output(bev)
        self.fd = fd
        installCallbacks()
    }

    deinit {
        // Leave the loop's flush list: unsent output goes with the socket.
        if let slot = flushSlot { loop.pendingFlush[slot] = nil }
        bufferevent_free(bev)
    }

    private func installCallbacks() {
        if writesDirectly {
            // Writes go through `flushQueued`; the write event is armed only when the kernel pushes back.
            // (A connect arms it by itself until the connection is up.)
            bufferevent_disable(bev, Int16(EV_WRITE))
        }
        // Unretained context: the socket's owner (or the loop, while lingering) keeps it alive, and deinit frees
        // the bufferevent, so no callback can outlive the object.
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bev, { _, context in
            let socket = Unmanaged<BufferedSocket>.fromOpaque(context!).takeUnretainedValue()
            // The owner may drop the socket from inside the callback; keep it alive until the call returns.
            withExtendedLifetime(socket) { socket.handleReadable() }
        }, { _, context in
            let socket = Unmanaged<BufferedSocket>.fromOpaque(context!).takeUnretainedValue()
            // The owner may drop the socket from inside the callback; keep it alive until the call returns.
            withExtendedLifetime(socket) { socket.handleDrained() }
        }, { _, what, context in
            let socket = Unmanaged<BufferedSocket>.fromOpaque(context!).takeUnretainedValue()
            // The owner may drop the socket from inside the callback; keep it alive until the call returns.
            withExtendedLifetime(socket) { socket.handleEvent(what) }
        }, context)
    }

    /// The socket's descriptor (-1 once released); kept here because asking the bufferevent for it takes
    /// an indirect call and its lock on every direct write.
    public private(set) var fd: Int32 = -1

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

    // MARK: Writing

    /// Whether a direct write that brings the output down to its low-water mark tells the delegate, as the
    /// bufferevent's own writes always do. An owner that may never wait for a drain turns this off, and on
    /// again the first time it does: the call goes through a weak reference, and that costs more than the
    /// rest of a small write's bookkeeping.
    public var reportsDirectDrains = true

    /// Bytes queued for the peer and not yet written to the kernel.
    public var outputCount: Int { evbuffer_get_length(output) }

    /// Queues a copy of `bytes`; they are written at the end of the loop pass.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        // What bufferevent_write does, without its call and lock.
        evbuffer_add(output, base, bytes.count)
        queueFlush()
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Queues the bytes of a shared buffer without copying them: every socket given the same buffer points at
    /// the same memory, which libevent frees when the last of them has written it.
    public func write(sharing buffer: SharedBuffer) {
        evbuffer_add_buffer_reference(output, buffer.evbuffer)
        queueFlush()
    }

    private func queueFlush() {
        guard writesDirectly, flushSlot == nil, !writeEventArmed else { return }
        flushSlot = loop.pendingFlush.count
        loop.pendingFlush.append(Unmanaged.passUnretained(self))
    }

    /// Writes queued output straight to the kernel, until it is all written or the kernel takes no more;
    /// what is left is handed to the bufferevent's write event, which also reports errors and write timeouts.
    func flushQueued() {
        guard writesDirectly, !writeEventArmed else { return }
        // A bufferevent keeps its output's front frozen except while it writes itself; do as it does.
        evbuffer_unfreeze(output, 1)
        while case let length = evbuffer_get_length(output), length > 0 {
            if evbuffer_get_contiguous_space(output) == length, let front = evbuffer_pullup(output, length) {
                // One piece, the usual case for a small backlog: `send` takes the socket's short path in the
                // kernel, where `writev` goes through the file layer and imports an iovec array first.
                let sent = send(fd, front, length, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
                if sent <= 0 { break }
                evbuffer_drain(output, sent)
            } else if evbuffer_write(output, fd) <= 0 {
                break
            }
        }
        evbuffer_freeze(output, 1)
        let left = evbuffer_get_length(output)
        if left > 0 {
            armWriteEvent()
        } else if isLingering {
            return halfClose()
        }
        // As the bufferevent would after a write: tell the owner the output is down to its low-water mark.
        if reportsDirectDrains && left <= writeLowWatermark { delegate?.socketDidDrain(self) }
    }

    private func armWriteEvent() {
        guard !writeEventArmed else { return }
        writeEventArmed = true
        bufferevent_enable(bev, Int16(EV_WRITE))
    }

    /// Drops queued output, keeping the bytes up to and including the first newline so that a line already
    /// partly written to the kernel is completed. Returns the number of bytes dropped.
    @discardableResult
    public func discardOutputAfterFirstLine() -> Int {
        let total = evbuffer_get_length(output)
        let found = evbuffer_search_eol(output, nil, nil, EVBUFFER_EOL_LF)
        guard found.pos >= 0 else { return 0 }
        let keep = found.pos + 1
        guard let kept = evbuffer_new() else { return 0 }
        defer { evbuffer_free(kept) }
        evbuffer_remove_buffer(output, kept, keep)
        evbuffer_drain(output, evbuffer_get_length(output))
        evbuffer_add_buffer(output, kept)
        return total - keep
    }

    /// After a write, `socketDidDrain` fires once the output is at or below `bytes` (0 means empty).
    public func setWriteLowWatermark(_ bytes: Int) {
        writeLowWatermark = bytes
        bufferevent_setwatermark(bev, Int16(EV_WRITE), bytes, 0)
    }

    /// Hands the connection's fd over to the caller, with the input read but not yet consumed, and leaves
    /// this socket empty: freeing it no longer closes the fd. Queued output is dropped, so call it once
    /// everything sent has been answered (a load generator's subscriber does, after its SUB's reply).
    public func releaseDescriptor() -> (fd: Int32, unread: [UInt8]) {
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

    // MARK: Timeouts and options

    /// `read`: end with `.readTimeout` when nothing arrives for that long while reading is enabled.
    /// `write`: end with `.writeTimeout` when pending output makes no progress for that long.
    public func setTimeouts(read: Duration?, write: Duration?) {
        var readValue = read?.timeval ?? timeval()
        var writeValue = write?.timeval ?? timeval()
        withUnsafePointer(to: &readValue) { readPointer in
            withUnsafePointer(to: &writeValue) { writePointer in
                _ = bufferevent_set_timeouts(bev, read == nil ? nil : readPointer, write == nil ? nil : writePointer)
            }
        }
    }

    /// TCP keepalive: the kernel probes an idle peer after `idle` and gives up after `count` unanswered probes.
    public func enableKeepalive(idle: Duration, interval: Duration = .seconds(10), count: Int32 = 6) {
        setOption(SOL_SOCKET, SO_KEEPALIVE, 1)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, Int32(max(1, idle.components.seconds)))
        setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, Int32(max(1, interval.components.seconds)))
        setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, count)
    }

    /// Sends small writes at once: replies and pushes are whole lines already batched per loop iteration.
    public func disableNagle() {
        setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Caps the kernel's send buffer (the kernel doubles `bytes` for its bookkeeping), which also turns off
    /// its autotuning for this socket.
    public func setSendBuffer(bytes: Int) {
        setOption(SOL_SOCKET, SO_SNDBUF, Int32(clamping: bytes))
    }

    private func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        // Best effort: a socket that is not TCP (or already dead) simply keeps the kernel's default.
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: Graceful close

    /// Stops delivering to the delegate, flushes queued output, half-closes, and frees the socket once the
    /// peer closes or `deadline` passes. The loop owns the socket meanwhile; the caller may drop it.
    public func closeGracefully(within deadline: Duration) {
        guard !isLingering else { return }
        isLingering = true
        delegate = nil
        loop.lingering[ObjectIdentifier(self)] = self
        lingerTimer = LoopTimer(loop: loop) { [unowned self] in self.finishLingering() }
        lingerTimer?.schedule(after: deadline)
        setWriteLowWatermark(0)
        setTimeouts(read: nil, write: nil)
        // Keep reading (and discarding) so that unread input does not turn our close into a reset that
        // destroys the last line before the peer reads it.
        if !peerClosed { enableReading() }
        if outputCount == 0 {
            halfClose()
        } else if writesDirectly && flushSlot == nil {
            // Not waiting for this pass's flush: hand the rest to the write event, which drains it.
            armWriteEvent()
        }
    }

    private func halfClose() {
        guard !halfClosed else { return }
        halfClosed = true
        if isTLS, let ssl = bufferevent_openssl_get_ssl(bev) {
            // close_notify, best effort: the output is drained, so nothing queued is overtaken.
            SSL_shutdown(ssl)
        }
        if peerClosed || isTLS {
            finishLingering()
        } else {
            shutdown(fd, Int32(SHUT_WR))
        }
    }

    private func finishLingering() {
        // Dropping the loop's reference frees the socket; keep it alive until this method is done with it.
        // libevent itself defers freeing a bufferevent whose callback is running.
        withExtendedLifetime(self) {
            lingerTimer?.cancel()
            let loop = self.loop
            loop.lingering[ObjectIdentifier(self)] = nil
            if loop.lingering.isEmpty { loop.whenLingeringDone?() }
        }
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
        } else if isTLS, case let code = bufferevent_get_openssl_error(bev), code != 0 {
            reason = .tls(TLSContext.lastError(code))
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
