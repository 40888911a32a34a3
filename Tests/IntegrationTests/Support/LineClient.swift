import Foundation

/// A blocking TCP client that speaks lines, with a receive timeout so that no test can hang.
/// Unchecked Sendable: a test hands a client to at most one other thread at a time.
final class LineClient: @unchecked Sendable {
    let fd: Int32
    private var isClosed = false
    private var buffer: [UInt8] = []
    private var start = 0

    init(host: String = "127.0.0.1", port: Int, timeout: TimeInterval = 10, receiveBuffer: Int32? = nil) throws {
        let family = host.contains(":") ? AF_INET6 : AF_INET
        // Close-on-exec: a process another test starts meanwhile (Foundation's Process closes only the
        // descriptors it was given) would keep this connection open in the server after `close()`.
        fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        if let receiveBuffer { setOption(SOL_SOCKET, SO_RCVBUF, receiveBuffer) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let status: Int32
        if family == AF_INET6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard status == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestFailure("connect to \(host):\(port): errno \(code)")
        }
    }

    /// Connects to a unix stream socket.
    init(unixPath: String, timeout: TimeInterval = 10) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in unixPath.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestFailure("connect to \(unixPath): errno \(code)")
        }
    }

    deinit { if !isClosed { Glibc.close(fd) } }

    func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sends all of `bytes`; throws if the peer stops taking them for the send timeout.
    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TestFailure("send: errno \(errno)")
            }
            sent += count
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends `line` and a LF.
    func sendLine(_ line: String) throws { try send(line + "\n") }

    /// Reads one line without its LF. Throws on timeout or EOF.
    func readLine() throws -> String {
        guard let line = try readLineOrEOF() else { throw TestFailure("connection closed") }
        return line
    }

    /// Reads one line, or nil at EOF.
    func readLineOrEOF() throws -> String? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[start..<newline], as: UTF8.self)
                start = newline + 1
                if start > 65536 { buffer.removeFirst(start); start = 0 }
                return line
            }
            guard try fill() else { return nil }
        }
    }

    /// The pushes queued to this connection before it executes a `PING <fence>`: every line up to that reply.
    func pushes(beforeFence fence: String = "fence") throws -> [String] {
        try sendLine("PING \(fence)")
        var lines: [String] = []
        while true {
            let line = try readLine()
            if line == "+PONG \(fence)" { return lines }
            lines.append(line)
        }
    }

    /// Reads exactly `count` bytes (a BMSG payload and what follows). Throws on timeout or EOF.
    func readBytes(_ count: Int) throws -> [UInt8] {
        while buffer.count - start < count {
            guard try fill() else { throw TestFailure("connection closed") }
        }
        let bytes = Array(buffer[start..<start + count])
        start += count
        return bytes
    }

    /// Reads more bytes into the buffer; false at EOF.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { throw TestFailure("timed out waiting for a line") }
            if errno == ECONNRESET { return false }
            throw TestFailure("recv: errno \(errno)")
        }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Sends a command and returns its reply line (pushes must not be expected on this connection).
    func command(_ line: String) throws -> String {
        try sendLine(line)
        return try readLine()
    }

    /// Reads lines until EOF (bounded by the receive timeout) and returns them.
    func readUntilClosed() throws -> [String] {
        var lines: [String] = []
        while let line = try readLineOrEOF() { lines.append(line) }
        return lines
    }

    /// Closes with a reset instead of a FIN (SO_LINGER 0), like a peer that crashed mid-stream.
    func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
        isClosed = true
    }

    /// Closes normally (FIN).
    func close() {
        Glibc.close(fd)
        isClosed = true
    }

    /// Half-closes our side.
    func closeWrite() { shutdown(fd, Int32(SHUT_WR)) }
}

/// Parses the `key=value` fields of an `+OK` INFO reply.
func infoFields(_ reply: String) -> [String: String] {
    var fields: [String: String] = [:]
    for part in reply.split(separator: " ").dropFirst() {
        let pair = part.split(separator: "=", maxSplits: 1)
        if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
    }
    return fields
}
