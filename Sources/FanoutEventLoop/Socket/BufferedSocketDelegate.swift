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
