import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on the loop (libevent's `evconnlistener`), handing each accepted socket to a closure.
public final class Listener {
    /// Strong: the event_base must outlive the event made from it.
    private let loop: EventLoop
    private var listener: OpaquePointer?
    private let onAccept: (Int32, SocketAddress) -> Void
    private let onError: (SystemError) -> Void
    /// The address actually bound: with port 0 in the request, this has the kernel's port.
    public private(set) var address: SocketAddress
    /// The socket file this listener created, removed again when it closes.
    private var ownedSocketFile: String?

    /// Binds and listens. `onAccept` receives a non-blocking fd that it now owns. For a unix socket, a stale
    /// socket file is replaced and the new one gets `unixMode` (e.g. 0o660).
    public convenience init(
        loop: EventLoop,
        address: SocketAddress,
        backlog: Int32 = 1024,
        unixMode: UInt32? = nil,
        onAccept: @escaping (Int32, SocketAddress) -> Void,
        onError: @escaping (SystemError) -> Void
    ) throws(SystemError) {
        var flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC
        if address.isIPv6 { flags |= LEV_OPT_BIND_IPV6ONLY }
        if address.isUnix { try Self.removeStaleSocket(address) }
        try self.init(
            loop: loop, address: address, onAccept: onAccept, onError: onError
        ) { context throws(SystemError) in
            try address.withSockaddr { (sockaddr, length) throws(SystemError) in
                try nonNull("listen on \(address)") {
                    evconnlistener_new_bind(loop.base, Self.acceptCallback, context, flags, backlog, sockaddr, length)
                }
            }
        }
        guard let made = listener else { return }
        if address.isUnix {
            ownedSocketFile = address.unixPath
            if let unixMode {
                try syscall("chmod \(address.unixPath)") { chmod(address.unixPath, mode_t(unixMode)) }
            }
        } else if let bound = SocketAddress.local(of: evconnlistener_get_fd(made)) {
            self.address = bound
        }
    }

    /// Removes a socket file left by a previous run (a file of another kind is left alone: bind then fails).
    /// A socket file where a server still answers is in use: taking it over would leave that server running
    /// but unreachable, and its exit would then remove this one's file.
    private static func removeStaleSocket(_ address: SocketAddress) throws(SystemError) {
        let path = address.unixPath
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return }
        if isAnswered(address) {
            throw SystemError(errno: EADDRINUSE, operation: "listen on \(address): another server answers there")
        }
        try syscall("remove stale socket \(path)") { unlink(path) }
    }

    /// Whether a connect to the unix socket `address` succeeds (a unix connect answers at once).
    private static func isAnswered(_ address: SocketAddress) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        let result = (try? address.withSockaddr { sockaddr, length in connect(probe, sockaddr, socklen_t(length)) }) ?? -1
        return result == 0 || errno == EAGAIN
    }

    /// Serves on a socket that is already bound and listening (socket activation). The fd becomes the
    /// listener's, and is closed with it.
    public convenience init(
        loop: EventLoop,
        listeningFD fd: Int32,
        onAccept: @escaping (Int32, SocketAddress) -> Void,
        onError: @escaping (SystemError) -> Void
    ) throws(SystemError) {
        guard let bound = SocketAddress.local(of: fd) else {
            throw SystemError(errno: errno, operation: "inherited fd \(fd) is not a socket")
        }
        evutil_make_socket_nonblocking(fd)
        let flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC
        try self.init(loop: loop, address: bound, onAccept: onAccept, onError: onError) { context throws(SystemError) in
            try nonNull("listen on inherited fd \(fd)") {
                evconnlistener_new(loop.base, Self.acceptCallback, context, flags, -1, fd)
            }
        }
    }

    /// What both ways of listening share: `listen` makes the evconnlistener, given its callbacks' context.
    private init(
        loop: EventLoop,
        address: SocketAddress,
        onAccept: @escaping (Int32, SocketAddress) -> Void,
        onError: @escaping (SystemError) -> Void,
        listen: (UnsafeMutableRawPointer) throws(SystemError) -> OpaquePointer
    ) throws(SystemError) {
        self.loop = loop
        self.onAccept = onAccept
        self.onError = onError
        self.address = address
        let made = try listen(CallbackContext(self).pointer)
        listener = made
        evconnlistener_set_error_cb(made, Self.errorCallback)
    }

    // The Listener's owner keeps it alive, and deinit frees the evconnlistener, and with it these callbacks
    // (`CallbackContext`).
    private static let acceptCallback: evconnlistener_cb = { _, fd, peer, peerLength, context in
        let listener = CallbackContext<Listener>(context!).object
        listener.onAccept(fd, SocketAddress(peer!, length: Int(peerLength)))
    }

    private static let errorCallback: evconnlistener_errorcb = { _, context in
        let listener = CallbackContext<Listener>(context!).object
        listener.onError(SystemError(errno: errno, operation: "accept on \(listener.address)"))
    }

    deinit {
        if let listener { evconnlistener_free(listener) }
        if let ownedSocketFile { unlink(ownedSocketFile) }
    }

    /// Stops accepting for a while (for example after EMFILE) without closing the socket.
    public func pause() {
        if let listener { evconnlistener_disable(listener) }
    }

    public func resume() {
        if let listener { evconnlistener_enable(listener) }
    }
}
