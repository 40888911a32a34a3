import FanoutRedis
import Testing

/// Commands in RESP, as hiredis is handed them: counts and lengths in decimal, written by the protocol layer's
/// one writer of digits.
@Suite
struct RedisCommandTests {
    @Test func encodesAnArrayOfBulkStringsEndedByNUL() {
        let command = RedisCommand.encode(["SET", "k", "0123456789", ""])
        #expect(command == Array("*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n$0\r\n\r\n\0".utf8))
    }

    @Test func writesCountsOfManyDigits() {
        var output: [UInt8] = []
        RedisCommand.appendHeader(count: 1_234, to: &output)
        RedisCommand.appendBulk(String(repeating: "x", count: 105), to: &output)
        #expect(output == Array("*1234\r\n$105\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 105) + [13, 10])
    }
}
