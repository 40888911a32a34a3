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
        let (listener, port) = try LoopbackListener.open(backlog: 16)
        self.listener = listener
        self.port = port
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
