/// Records on their way to one segment, encoded by the loop (`HistoryRecord.appendUnsealed`) and sealed with
/// their checksums by the writer.
public struct EncodedRecords: Sendable {
    public var segment: UInt32
    public var bytes: RecordBytes
    public var count: Int

    public init(segment: UInt32, bytes: RecordBytes, count: Int = 0) {
        self.segment = segment
        self.bytes = bytes
        self.count = count
    }
}

/// Encoded records on their way from the loop to the writer: one raw allocation that the loop fills
/// (`HistoryRecord.appendUnsealed`) and the writer seals, writes and hands back (`HistoryWriter.submit` returns
/// spares), so that a steady stream neither allocates per batch nor regrows a buffer in the middle of a run.
/// Writing a record is a bounds check, the header's stores and two copies; through `[UInt8]` it was three
/// capacity checks and a generic fill, about 35 ns of the loop's time per retained message.
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

/// Emptied record buffers the writer keeps for the loop to fill again. It keeps what one busy pass wrote, up
/// to `keptBytes` (a 10 ms pass of scenario C is about 450 runs of 14 KiB), and all but `idleCount` go when
/// the writer goes idle. A buffer grown past `largestKept` is freed: a batch is handed over at 1 MiB, so only
/// an outsized payload grows one that far. Kept at 2, the pool made the loop allocate a new buffer for almost
/// every run, which cost about 7% of scenario C's rate in paired runs.
struct RecordBytesPool {
    static let keptBytes = 8 << 20
    static let idleCount = 2
    static let largestKept = 2 << 20

    private var buffers: [RecordBytes] = []
    private var bytes = 0

    /// Keeps `buffer`, emptied, if there is room.
    mutating func keep(_ buffer: RecordBytes) {
        guard buffer.capacity <= Self.largestKept, bytes + buffer.capacity <= Self.keptBytes else { return }
        buffer.removeAll()
        buffers.append(buffer)
        bytes += buffer.capacity
    }

    /// Moves buffers into `spares` until it holds `idleCount`: the loop's next runs fill them.
    mutating func lend(to spares: inout [RecordBytes]) {
        while spares.count < Self.idleCount, let buffer = buffers.popLast() {
            bytes -= buffer.capacity
            spares.append(buffer)
        }
    }

    /// Lets all but `idleCount` go.
    mutating func trim() {
        while buffers.count > Self.idleCount, let buffer = buffers.popLast() { bytes -= buffer.capacity }
    }

    var count: Int { buffers.count }
}
