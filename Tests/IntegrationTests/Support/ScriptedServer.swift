import Foundation

/// A listener on a loopback port chosen by the kernel whose connections a test drives line by line: a
/// stand-in for a server that only speaks protocol 1.0 (no `epoch=`, no RESUME), which fanoutd no longer is.
final class ScriptedServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32

    /// One accepted connection, with a receive timeout so that no test can hang.
    final class Connection: @unchecked Sendable {
        private let fd: Int32
        private var buffer: [UInt8] = []

        fileprivate init(fd: Int32, timeout: TimeInterval) {
            self.fd = fd
            var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { Glibc.close(fd) }

        func send(_ text: String) throws {
            let bytes = Array(text.utf8)
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw TestFailure("send: errno \(errno)") }
                sent += count
            }
        }

        /// Reads one line without its LF.
        func readLine() throws -> String {
            while true {
                if let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw TestFailure(count == 0 ? "connection closed" : "recv: errno \(errno)") }
                buffer.append(contentsOf: chunk[0..<count])
            }
        }

        /// Closes with a reset, as a crashed server's connections go.
        func reset() {
            var option = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(listener, pointer, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard listening else {
            Glibc.close(listener)
            throw TestFailure("cannot listen: errno \(errno)")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { Glibc.close(listener) }

    /// Waits for the next connection, up to `timeout` seconds.
    func accept(timeout: TimeInterval = 10) throws -> Connection {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { throw TestFailure("no connection within \(timeout)s") }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw TestFailure("accept: errno \(errno)") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return Connection(fd: fd, timeout: timeout)
    }
}
