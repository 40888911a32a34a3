/// Encoded records on their way from the loop to the writer: one raw allocation that the loop fills
/// (`HistoryRecord.appendUnsealed`) and the writer seals, writes and hands back (`HistoryWriter.submit` returns
/// spares), so that a steady stream neither allocates per batch nor regrows a buffer in the middle of a run.
/// Writing a record is a bounds check and three copies; through `[UInt8]` it was three capacity checks and a
/// generic fill, about 35 ns of the loop's time per retained message.
///
/// Threading: one thread owns it at a time; it passes from the loop to the writer and back through the
/// writer's queue, under that queue's lock, hence `@unchecked Sendable`.
public final class RecordBytes: @unchecked Sendable {
    public private(set) var base: UnsafeMutableRawPointer
    public private(set) var count = 0
    public private(set) var capacity: Int

    /// A new buffer's capacity: a publish run of 100 records of 100-byte payloads takes 14 KiB.
    public static let initialCapacity = 16 << 10

    public init(capacity: Int = RecordBytes.initialCapacity) {
        self.capacity = max(capacity, 64)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// Takes `bytes` more at the end and returns where to write them. Grows by doubling.
    @inline(__always)
    public func claim(_ bytes: Int) -> UnsafeMutableRawPointer {
        if count + bytes > capacity { grow(toAtLeast: count + bytes) }
        let at = base + count
        count += bytes
        return at
    }

    public var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: count) }

    public func removeAll() { count = 0 }

    private func grow(toAtLeast needed: Int) {
        var newCapacity = capacity
        while newCapacity < needed { newCapacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}
