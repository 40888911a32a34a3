import FanoutProtocol
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Nanoseconds on the monotonic clock: the timestamps carried in benchmark payloads (one process writes and
/// reads them, so one clock serves both ends).
enum MonotonicClock {
    static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// Benchmark payloads: 19 decimal digits of send time, then filler up to the requested size.
public enum BenchPayload {
    public static let timestampDigits = 19

    static func write(timestamp: UInt64, into payload: inout [UInt8]) {
        var value = timestamp
        for index in stride(from: timestampDigits - 1, through: 0, by: -1) {
            payload[index] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
    }

    /// The send time in a received payload, or nil when it is not a benchmark payload.
    static func timestamp(in payload: UnsafeRawBufferPointer) -> UInt64? {
        guard payload.count >= timestampDigits else { return nil }
        return DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: payload.prefix(timestampDigits)))
    }

    /// `lineFeed` puts an LF right after the send time, so that a `BPUB` payload is not a line and the server
    /// pushes it as `BMSG` (a payload without one, up to `max_line`, goes out as an ordinary `MSG` line).
    static func make(size: Int, lineFeed: Bool = false) -> [UInt8] {
        var payload = [UInt8](repeating: UInt8(ascii: "0"), count: timestampDigits)
            + [UInt8](repeating: UInt8(ascii: "x"), count: max(0, size - timestampDigits))
        if lineFeed && size > timestampDigits { payload[timestampDigits] = 0x0A }
        return payload
    }
}
