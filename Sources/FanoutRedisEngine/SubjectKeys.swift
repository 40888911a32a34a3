import FanoutProtocol

/// Where a subject lives in Redis: its shard (by hash, the same on every node), its keys and its channel.
enum SubjectKeys {
    static let channelPrefix = Array("fanout:m:".utf8)
    static let shardEpochKey = "fanout:epoch"
    static let numberingsKey = "fanout:numberings"

    /// FNV-1a over the subject's bytes: stable across nodes, builds and restarts.
    static func shard(of subject: String, count: Int) -> Int {
        guard count > 1 else { return 0 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in subject.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return Int(hash % UInt64(count))
    }

    /// The five keys the scripts take, the subject as hash tag.
    static func keys(of subject: String) -> [String] {
        ["fanout:{\(subject)}:seq", "fanout:{\(subject)}:log", "fanout:{\(subject)}:epoch", shardEpochKey, numberingsKey]
    }

    static func channel(of subject: String) -> [UInt8] { channelPrefix + Array(subject.utf8) }

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
