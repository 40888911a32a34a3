import FanoutProtocol
import FanoutRedis

/// Where a subject lives in Redis: its shard (by hash, the same on every node), its keys and its channel.
enum SubjectKeys {
    static let channelPrefix = Array("fanout:m:".utf8)
    static let shardEpochKey = "fanout:epoch"
    static let numberingsKey = "fanout:numberings"
    /// The Redis run (`run_id`) that last confirmed the shard epoch (`EngineScripts.checkEpoch`).
    static let shardRunKey = "fanout:epoch:run"

    /// FNV-1a over the subject's bytes: stable across nodes, builds and restarts.
    static func shard(of subject: String, count: Int) -> Int {
        guard count > 1 else { return 0 }
        var subject = subject
        return subject.withUTF8 { shard(of: UnsafeRawBufferPointer($0), count: count) }
    }

    static func shard(of subject: UnsafeRawBufferPointer, count: Int) -> Int {
        guard count > 1 else { return 0 }
        return shard(ofHash: hash(subject), count: count)
    }

    /// The shard of a subject whose `hash` is known already (the publish path needs both).
    static func shard(ofHash hash: UInt64, count: Int) -> Int { Int(hash % UInt64(count)) }

    static func hash(_ subject: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in subject { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    /// The four keys the scripts take, the subject as hash tag.
    static func keys(of subject: String) -> [String] {
        ["fanout:{\(subject)}:seq", "fanout:{\(subject)}:log", shardEpochKey, numberingsKey]
    }

    /// The subject's own two keys (its position and its stream) as bulk strings (on the publish path).
    static func appendSubjectKeys(of subject: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        for suffix in [Self.positionSuffix, Self.logSuffix] {
            output.append(UInt8(ascii: "$"))
            RedisCommandDigits.append(keyOpening.count + subject.count + suffix.count, to: &output)
            output.append(contentsOf: [13, 10])
            output.append(contentsOf: keyOpening)
            output.append(contentsOf: subject)
            output.append(contentsOf: suffix)
            output.append(contentsOf: [13, 10])
        }
    }

    private static let keyOpening = Array("fanout:{".utf8)
    private static let positionSuffix = Array("}:seq".utf8)
    private static let logSuffix = Array("}:log".utf8)
    /// `$12 fanout:epoch` and `$17 fanout:numberings`, encoded once: the shard's two keys.
    static let shardKeysEncoded: [UInt8] = {
        var output: [UInt8] = []
        for key in [shardEpochKey, numberingsKey] {
            output += Array("$\(key.utf8.count)\r\n\(key)\r\n".utf8)
        }
        return output
    }()

    static func channel(of subject: String) -> [UInt8] { channelPrefix + Array(subject.utf8) }

    /// The channel as a bulk string, appended (on the publish path).
    static func appendChannel(of subject: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "$"))
        RedisCommandDigits.append(channelPrefix.count + subject.count, to: &output)
        output.append(contentsOf: [13, 10])
        output.append(contentsOf: channelPrefix)
        output.append(contentsOf: subject)
        output.append(contentsOf: [13, 10])
    }

    /// The subject of a message channel, or nil for another channel.
    static func subject(ofChannel channel: [UInt8]) -> String? {
        guard channel.count > channelPrefix.count, channel.starts(with: channelPrefix) else { return nil }
        return String(decoding: channel[channelPrefix.count...], as: UTF8.self)
    }

    /// The broad glob a wildcard pattern is folded into: its first token when that is literal (`orders.*.eu`
    /// and `orders.>` both become `fanout:m:orders.*`), else every subject (`fanout:m:*`). A node holds one
    /// glob per distinct first token, since Redis's cost per PUBLISH grows with the number of patterns; the
    /// server's own index then filters what arrives.
    static func glob(of pattern: String) -> (glob: [UInt8], prefix: [UInt8]) {
        let first = pattern.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard first != "*" && first != ">" && pattern.contains(".") else { return (channelPrefix + [UInt8(ascii: "*")], channelPrefix) }
        var escaped: [UInt8] = []
        for byte in first.utf8 {
            if byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "[")
                || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "\\") {
                escaped.append(UInt8(ascii: "\\"))
            }
            escaped.append(byte)
        }
        return (channelPrefix + escaped + Array(".*".utf8), channelPrefix + Array(first.utf8) + [UInt8(ascii: ".")])
    }

    /// The channel prefix a folded glob covers: everything before its final `*`, unescaped.
    static func prefix(ofGlob glob: [UInt8]) -> [UInt8] {
        var prefix: [UInt8] = []
        var escaping = false
        for byte in glob.dropLast() {
            if !escaping && byte == UInt8(ascii: "\\") {
                escaping = true
                continue
            }
            escaping = false
            prefix.append(byte)
        }
        return prefix
    }
}

/// Decimal digits for RESP lengths.
enum RedisCommandDigits {
    static func append(_ value: Int, to output: inout [UInt8]) {
        if value >= 10 { append(value / 10, to: &output) }
        output.append(UInt8(ascii: "0") + UInt8(value % 10))
    }
}
