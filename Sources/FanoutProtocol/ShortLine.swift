#if canImport(Glibc)
import Glibc
#endif

/// A line's fields written on the stack, then appended to a buffer in one copy: each append of its own cost a
/// uniqueness and a capacity check, and a question's `DONE` took 800 instructions in nine of them.
struct ShortLine {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private(set) var count = 0

    private init(base: UnsafeMutableRawPointer, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    /// Appends to `buffer` what `write` puts, at most `capacity` bytes (checked: more is a programming error).
    static func append(capacity: Int, to buffer: inout [UInt8], _ write: (inout ShortLine) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { memory in
            var line = ShortLine(base: memory.baseAddress!, capacity: capacity)
            write(&line)
            buffer.append(contentsOf: UnsafeRawBufferPointer(start: memory.baseAddress, count: line.count))
        }
    }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        precondition(count < capacity, "a short line's capacity is exceeded")
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        precondition(count + bytes.count <= capacity, "a short line's capacity is exceeded")
        memcpy(base + count, source, bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The decimal digits of `value`, at most 20.
    mutating func putDecimal(_ value: UInt64) {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        precondition(count + digits <= capacity, "a short line's capacity is exceeded")
        var remaining = value
        var offset = count + digits
        repeat {
            offset -= 1
            base.storeBytes(of: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10), toByteOffset: offset,
                            as: UInt8.self)
            remaining /= 10
        } while remaining > 0
        count += digits
    }
}
