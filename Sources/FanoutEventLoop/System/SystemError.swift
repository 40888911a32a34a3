#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system or libevent call, carrying `errno` and the name of the call that failed.
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The `errno` value at the time of the failure (0 when the call sets none).
    public let errno: Int32
    /// What was being done, e.g. `"bind 127.0.0.1:7411"`.
    public let operation: String

    public init(errno: Int32, operation: String) {
        self.errno = errno
        self.operation = operation
    }

    /// The C library's text for `errno`, lower-cased as users read it in one-line errors.
    public var reason: String {
        guard errno != 0, let text = strerror(errno) else { return "failed" }
        return String(cString: text).lowercased()
    }

    public var description: String { "\(operation): \(reason)" }
}

/// Runs a raw call that reports failure with a negative return value and `errno`, and throws instead.
@discardableResult
func syscall<T: BinaryInteger>(_ operation: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
    let result = body()
    if result < 0 {
        throw SystemError(errno: Glibc.errno, operation: operation())
    }
    return result
}

/// Runs a raw call that reports failure with a nil pointer, and throws instead.
func nonNull<T>(_ operation: @autoclosure () -> String, _ body: () -> T?) throws(SystemError) -> T {
    guard let value = body() else {
        throw SystemError(errno: Glibc.errno, operation: operation())
    }
    return value
}
