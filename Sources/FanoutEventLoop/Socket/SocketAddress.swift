import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address, parsed from `HOST:PORT` or `[V6HOST]:PORT`.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The raw bytes of a `sockaddr_in` or `sockaddr_in6`.
    let storage: [UInt8]

    /// Parses `127.0.0.1:7411`, `[::1]:7411`, `0.0.0.0:7411`, `localhost:7411` or `unix:/path/to.sock`.
    public init(parsing text: String) throws(SystemError) {
        if text.hasPrefix("unix:") {
            let path = Array(text.dropFirst(5).utf8)
            var address = sockaddr_un()
            let capacity = MemoryLayout.size(ofValue: address.sun_path)
            guard !path.isEmpty, path.count < capacity else {
                throw SystemError(errno: EINVAL, operation: "address '\(text)': a unix socket path of 1 to \(capacity - 1) bytes is needed")
            }
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.enumerated() { raw[index] = byte }
            }
            let length = MemoryLayout<sa_family_t>.size + path.count + 1
            storage = withUnsafeBytes(of: &address) { Array($0.prefix(length)) }
            return
        }
        guard let (host, port) = Self.split(text) else {
            throw SystemError(errno: EINVAL, operation: "address '\(text)' is not HOST:PORT or [V6HOST]:PORT")
        }
        // getaddrinfo takes any number and keeps its low 16 bits: 99999 would quietly be port 34463.
        guard port.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), port.utf8.count <= 5,
              let number = Int(port), number <= 65535 else {
            throw SystemError(errno: EINVAL, operation: "address '\(text)': the port must be a number from 0 to 65535")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, port, &hints, &result)
        guard status == 0, let first = result else {
            let why = String(cString: gai_strerror(status))
            throw SystemError(errno: 0, operation: "address '\(text)': \(why.lowercased())")
        }
        defer { freeaddrinfo(result) }
        storage = Array(UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
    }

    /// Copies a `sockaddr` handed over by the kernel (accept, getsockname).
    init(_ address: UnsafePointer<sockaddr>, length: Int) {
        storage = Array(UnsafeRawBufferPointer(start: address, count: length))
    }

    /// Splits `host:port` at the last colon, or `[v6]:port` at its bracket. Nil when either part is missing.
    static func split(_ text: String) -> (host: String, port: String)? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":"), rest.count > 1, !host.isEmpty else { return nil }
            return (String(host), String(rest.dropFirst()))
        }
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let host = text[..<colon]
        let port = text[text.index(after: colon)...]
        guard !host.isEmpty, !port.isEmpty, !host.contains(":") else { return nil }
        return (String(host), String(port))
    }

    /// The address family, read from the first two bytes only: a unix peer's address may be no longer.
    public var family: Int32 {
        storage.withUnsafeBytes { raw in
            raw.count >= MemoryLayout<sa_family_t>.size ? Int32(raw.loadUnaligned(as: sa_family_t.self)) : AF_UNSPEC
        }
    }

    public var isIPv6: Bool { family == AF_INET6 }

    public var isUnix: Bool { family == AF_UNIX }

    /// The path of a unix socket address (empty for an unnamed peer).
    public var unixPath: String {
        storage.withUnsafeBytes { raw in
            let pathOffset = MemoryLayout<sa_family_t>.size
            guard raw.count > pathOffset else { return "" }
            let bytes = raw[pathOffset...].prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The port in host byte order (0 for unix sockets).
    public var port: Int {
        if isUnix { return 0 }
        return storage.withUnsafeBytes { raw in
            if isIPv6 { return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)) }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// An IPv4 address and port in host byte order; nil for IPv6 and unix sockets.
    public var ipv4: (address: UInt32, port: UInt16)? {
        guard family == AF_INET, storage.count >= MemoryLayout<sockaddr_in>.size else { return nil }
        return storage.withUnsafeBytes { raw in
            let address = raw.loadUnaligned(as: sockaddr_in.self)
            return (UInt32(bigEndian: address.sin_addr.s_addr), UInt16(bigEndian: address.sin_port))
        }
    }

    /// The numeric host, without brackets.
    public var host: String {
        storage.withUnsafeBytes { raw in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if isIPv6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
            } else {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
            }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// `127.0.0.1:7411`, `[::1]:7411` or `unix:/run/fanout/fanoutd.sock`.
    public var description: String {
        if isUnix { return "unix:\(unixPath)" }
        return isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, Int32) throws(SystemError) -> R) throws(SystemError) -> R {
        let result: Result<R, SystemError> = storage.withUnsafeBytes { raw in
            do throws(SystemError) {
                return .success(try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), Int32(raw.count)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The local address a socket is bound to (to read back port 0).
    static func local(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: Int(length)) }
        }
    }
}
