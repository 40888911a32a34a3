import Foundation

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks, for test servers and proxies.
enum LoopbackListener {
    /// The listening fd, which the caller owns, and its port.
    static func open(backlog: Int32) throws -> (fd: Int32, port: Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(listener, pointer, length) == 0 && listen(listener, backlog) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard listening else {
            Glibc.close(listener)
            throw TestFailure("cannot listen on 127.0.0.1: errno \(errno)")
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }
}
