/// Unsigned decimal numbers in protocol bytes (seqs, counts, lengths): the one reader and the one writer of
/// digits, for Fanout's lines, Redis commands and the load generator's frames alike.
public enum DecimalDigits {
    /// Appends the decimal digits of `value`: written backwards into 20 bytes on the stack, then appended in
    /// one copy (an append per digit cost a uniqueness and a capacity check each).
    public static func append(_ value: UInt64, to buffer: inout [UInt8]) {
        if value < 10 {
            buffer.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for UInt64.max's 20 digits
        withUnsafeMutableBytes(of: &digits) { raw in
            var start = 20
            var remaining = value
            while remaining > 0 {
                start -= 1
                raw[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
                remaining /= 10
            }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[start..<20]))
        }
    }

    /// The value of `bytes` when they are one or more ASCII digits and fit in 64 bits; nil otherwise (a sign,
    /// an exponent, a space or an overflow included).
    @inlinable
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard !bytes.isEmpty, case let (value, end)? = scan(bytes, from: 0), end == bytes.count else { return nil }
        return value
    }

    /// Reads the digits from `start` up to the first byte that is not one: their value and where they end.
    /// Nil when there is no digit at `start` or the value does not fit in 64 bits.
    @inlinable
    public static func scan(_ bytes: UnsafeRawBufferPointer, from start: Int) -> (value: UInt64, end: Int)? {
        var value: UInt64 = 0
        var index = start
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            let (multiplied, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (added, carried) = multiplied.addingReportingOverflow(UInt64(digit))
            guard !overflowed, !carried else { return nil }
            value = added
            index += 1
        }
        return index > start ? (value, index) : nil
    }

    /// Digits of all the numbers from `first` through `last` written in decimal, in O(20): the size of a run of
    /// consecutive seqs in `MSG` lines.
    public static func total(from first: UInt64, through last: UInt64) -> Int {
        guard first <= last else { return 0 }
        var total = 0
        var low: UInt64 = 0  // the smallest number of `width` digits
        for width in 1...20 {
            let high: UInt64 = width == 20 ? .max : (width == 1 ? 9 : low &* 10 &- 1)
            let from = max(first, low), through = min(last, high)
            if from <= through { total += Int(through - from + 1) * width }
            if high >= last { break }
            low = width == 1 ? 10 : low &* 10
        }
        return total
    }
}
