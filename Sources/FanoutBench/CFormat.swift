#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// printf-style numbers (`%.1f`, `%d`) with the C library's own `vsnprintf`, for the tool's tables and
/// progress lines: `String(format:)` would pull in the whole of Foundation, and with it ICU, which was most
/// of the `fanout` executable's size. Arguments are numbers and C strings only (no `%@`).
public func cFormat(_ format: String, _ arguments: CVarArg...) -> String {
    var size = 128
    while true {
        var buffer = [CChar](repeating: 0, count: size)
        // Each pass needs a va_list of its own: vsnprintf consumes the one it gets.
        let needed = Int(withVaList(arguments) { vsnprintf(&buffer, size, format, $0) })
        guard needed >= size else {
            return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
        }
        size = needed + 1
    }
}
