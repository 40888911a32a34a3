import FanoutProtocol

/// Commands in Redis's wire format (RESP arrays of bulk strings), built in Swift so that hiredis gets them
/// ready-made (`redisAsyncFormattedCommand`) and no C argument vectors are assembled per command.
public enum RedisCommand {
    /// Appends `*<n>` and each argument as a bulk string.
    public static func append(_ arguments: [[UInt8]], to output: inout [UInt8]) {
        appendHeader(count: arguments.count, to: &output)
        for argument in arguments { argument.withUnsafeBytes { appendBulk($0, to: &output) } }
    }

    public static func encode(_ arguments: [String]) -> [UInt8] {
        var output: [UInt8] = []
        append(arguments.map { Array($0.utf8) }, to: &output)
        terminate(&output)
        return output
    }

    /// Ends a command with the NUL byte hiredis needs after it (not sent; see `RedisConnection`).
    public static func terminate(_ output: inout [UInt8]) {
        output.append(0)
    }

    /// `*<count>\r\n`.
    public static func appendHeader(count: Int, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "*"))
        DecimalDigits.append(UInt64(count), to: &output)
        output.append(contentsOf: [13, 10])
    }

    /// `$<length>\r\n<bytes>\r\n`.
    public static func appendBulk(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "$"))
        DecimalDigits.append(UInt64(bytes.count), to: &output)
        output.append(contentsOf: [13, 10])
        output.append(contentsOf: bytes)
        output.append(contentsOf: [13, 10])
    }

    public static func appendBulk(_ text: String, to output: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendBulk(UnsafeRawBufferPointer($0), to: &output) }
    }
}
