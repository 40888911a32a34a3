import CCRC32C

/// CRC-32C (Castagnoli), the checksum of every history record: the processor's crc32 instruction where it has
/// one (SSE 4.2, `CCRC32C`: about 8 bytes per cycle), else slicing by 8 over tables built once, in plain
/// Swift (about a byte per cycle). The table's share of a 100-byte publish with disk history was a tenth of the
/// server's time.
public enum CRC32C {
    /// Whether the instruction is there, asked once.
    public static let usesHardware = fanout_crc32c_hardware() != 0

    private static let polynomial: UInt32 = 0x82F6_3B78

    /// Eight 256-entry tables: `tables[k][b]` is the CRC of byte `b` followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for slice in 1..<8 {
                crc = (crc >> 8) ^ tables[Int(crc & 0xFF)]
                tables[slice * 256 + byte] = crc
            }
        }
        return tables
    }()

    /// The CRC of `bytes`, continuing from `crc` (0 to start).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        if usesHardware, let base = bytes.baseAddress { return ~fanout_crc32c_update(~crc, base, bytes.count) }
        return checksumWithTables(bytes, continuing: crc)
    }

    /// The CRCs of three buffers, each continuing from `crc`: computed interleaved, which takes about the time
    /// of one of them (`fanout_crc32c_update3`).
    public static func checksums(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ c: UnsafeRawBufferPointer,
                                 continuing crc: UInt32) -> (UInt32, UInt32, UInt32) {
        guard usesHardware, let first = a.baseAddress, let second = b.baseAddress, let third = c.baseAddress else {
            return (checksum(a, continuing: crc), checksum(b, continuing: crc), checksum(c, continuing: crc))
        }
        var registers = (~crc, ~crc, ~crc)
        let pointers = (first, second, third)
        let counts = (a.count, b.count, c.count)
        // Homogeneous tuples are laid out as C arrays.
        withUnsafeMutableBytes(of: &registers) { registers in
            withUnsafeBytes(of: pointers) { pointers in
                withUnsafeBytes(of: counts) { counts in
                    fanout_crc32c_update3(registers.baseAddress!.assumingMemoryBound(to: UInt32.self),
                                          pointers.baseAddress!.assumingMemoryBound(to: UnsafeRawPointer?.self),
                                          counts.baseAddress!.assumingMemoryBound(to: Int.self))
                }
            }
        }
        return (~registers.0, ~registers.1, ~registers.2)
    }

    /// `checksum` in plain Swift, whatever the processor (the tests compare the two).
    static func checksumWithTables(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var crc = ~crc
        var index = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { table in
            while index + 8 <= count {
                let low = bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self).littleEndian ^ crc
                let high = bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self).littleEndian
                crc = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ table[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
                index += 1
            }
        }
        return ~crc
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
