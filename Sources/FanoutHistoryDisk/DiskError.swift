#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed file operation: what was attempted, on which path, and errno.
public struct DiskError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let path: String
    public let errno: Int32

    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var description: String {
        "\(operation) \(path): \(String(cString: strerror(errno)))"
    }
}

/// The one wrapper around raw file calls: a failure (-1) becomes a thrown `DiskError` carrying errno, and an
/// interrupted call is repeated.
@discardableResult
func syscall<T: FixedWidthInteger>(_ operation: String, _ path: String, _ call: () -> T) throws(DiskError) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw DiskError(operation: operation, path: path, errno: code)
    }
}
