/// The standard's syntax for topic names and filters (section 4.7), on strings already checked as UTF-8.
/// The mapping to fanout subjects (`MQTTTopicMapping`) comes after these checks.
public enum MQTTTopicRules {
    static let slash = UInt8(ascii: "/")
    static let plus = UInt8(ascii: "+")
    static let hash = UInt8(ascii: "#")

    /// A topic name (PUBLISH, a will): at least one byte (MQTT-4.7.3-1), no wildcard (MQTT-3.3.2-2).
    public static func validateName(_ topic: String) throws(MQTTDecodeError) {
        guard !topic.utf8.isEmpty else { throw .malformed("MQTT-4.7.3-1", "empty topic name") }
        for byte in topic.utf8 where byte == plus || byte == hash {
            throw .malformed("MQTT-3.3.2-2", "a topic name cannot hold the wildcard '\(Character(.init(byte)))'")
        }
    }

    /// A topic filter (SUBSCRIBE, UNSUBSCRIBE): at least one byte (MQTT-4.7.3-1); `#` only as the whole last
    /// level (MQTT-4.7.1-2); `+` only as a whole level (MQTT-4.7.1-3).
    public static func validateFilter(_ filter: String) throws(MQTTDecodeError) {
        let bytes = filter.utf8
        guard !bytes.isEmpty else { throw .malformed("MQTT-4.7.3-1", "empty topic filter") }
        var levelStart = bytes.startIndex
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == plus || byte == hash {
                let next = bytes.index(after: index)
                let alone = index == levelStart && (next == bytes.endIndex || bytes[next] == slash)
                if byte == hash {
                    guard alone && next == bytes.endIndex else {
                        throw .malformed("MQTT-4.7.1-2", "'#' must be the whole last level of \(excerpt(filter))")
                    }
                } else if !alone {
                    throw .malformed("MQTT-4.7.1-3", "'+' must be a whole level of \(excerpt(filter))")
                }
            }
            if byte == slash { levelStart = bytes.index(after: index) }
            index = bytes.index(after: index)
        }
    }

    /// A filter's start for an error text: at most 64 bytes, so a log line stays short.
    static func excerpt(_ text: String) -> String {
        text.utf8.count <= 64 ? "'\(text)'" : "'\(String(decoding: text.utf8.prefix(64), as: UTF8.self))...'"
    }
}
