import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// Operations on a bare fd that never becomes a `BufferedSocket`.
public enum RawSocket {
    /// Sends `line` once without blocking (best effort: a full buffer drops it), then closes `fd`.
    /// Used to refuse a connection at accept time.
    public static func refuse(_ fd: Int32, with line: String) {
        var line = line
        line.withUTF8 { bytes in
            _ = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
        close(fd)
    }

    /// This machine's host name, for greetings; "localhost" when it cannot be read.
    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }
}
