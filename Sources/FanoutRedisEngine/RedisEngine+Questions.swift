import FanoutRedis

/// Questions across nodes (1.2). Every node subscribes, on the first shard, to `fanout:questions` (so a
/// PUBLISH there reaches each node exactly once, and its count is the number of nodes) and to its own
/// channel, `fanout:node:<id>`, where the nodes it asked send back what happened:
/// - the question: `<id> <origin node> <asker connection> <timeout ms> <subject> <payload>` on
///   `fanout:questions`, and `C <id>` there when the origin closes it while some asked connection is still
///   silent (the cap of answers, the timeout, its asker gone), so that every node forgets it at once and a late
///   answer gets `+OK 0`;
/// - back to the origin: `R <id> <asked>` (each node, once: how many of its connections it asked), `A <id>
///   <responder> <payload>` (an answer) and `G <id> <count>` (asked connections that vanished unanswered).
/// A group's one member cluster-wide is the member of the node whose `SET NX` of `fanout:{questions}:<id>:
/// <group>` succeeds. Cost per question: one PUBLISH, then per node one PUBLISH back, one per answer, and one
/// claim per group it holds members of; one PUBLISH more for a question closed with receivers still silent.
extension RedisEngine {
    public enum QuestionEvent {
        /// A question for this node's receivers.
        case asked(id: String, origin: String, askerConnection: UInt64, timeoutMilliseconds: UInt64, subject: String,
                   payload: [UInt8])
        /// A node says how many connections it asked.
        case report(id: String, asked: Int)
        case answer(id: String, responder: String, payload: [UInt8])
        case gone(id: String, count: Int)
        /// The origin closed the question: its receivers here are no longer waited for.
        case closed(id: String)
    }

    static let questionsChannel = Array("fanout:questions".utf8)
    var nodeChannel: [UInt8] { Array("fanout:node:\(nodeID)".utf8) }

    /// Subscribes to the question channels and the groups' hand-back channel (the shard subscribes again
    /// after each reconnection).
    func subscribeToSharedChannels() {
        shards[0].subscribe(Self.questionsChannel)
        shards[0].subscribe(nodeChannel)
        shards[0].subscribe(Self.handBackChannel)
    }

    /// Puts a question to every node; `reply` gets how many nodes it reached, or why it could not.
    public func ask(id: String, askerConnection: UInt64, timeoutMilliseconds: UInt64, subject: String,
                    payload: UnsafeRawBufferPointer, reply: @escaping (Result<Int64, RedisFailure>) -> Void) {
        var message = Array("\(id) \(nodeID) \(askerConnection) \(timeoutMilliseconds) \(subject) ".utf8)
        message.append(contentsOf: payload)
        let command = Self.command([Array("PUBLISH".utf8), Self.questionsChannel, message])
        let refusal = shards[0].send(command) { result in
            switch result {
            case .success(.integer(let nodes)): reply(.success(nodes))
            case .success(let other): reply(.failure(.unavailable("PUBLISH answered \(other)")))
            case .failure(let failure): reply(.failure(failure))
            }
        }
        if let refusal { reply(.failure(refusal)) }
    }

    /// Tells every node that question `id` is closed (`C <id>` on `fanout:questions`, after the question itself
    /// on the same channel and connection, so no node hears the close before the question).
    public func closeQuestion(id: String) {
        _ = shards[0].send(Self.command([Array("PUBLISH".utf8), Self.questionsChannel, Array("C \(id)".utf8)])) { _ in }
    }

    /// Sends `R`, `A` or `G` to the question's origin node.
    public func tellOrigin(_ origin: String, _ message: [UInt8]) {
        _ = shards[0].send(Self.command([Array("PUBLISH".utf8), Array("fanout:node:\(origin)".utf8), message])) { _ in }
    }

    /// Claims question `id` for `group` on this node: true when this node's member is to be asked.
    public func claimQuestion(id: String, group: String, timeoutMilliseconds: UInt64, reply: @escaping (Bool) -> Void) {
        let command = RedisCommand.encode(["SET", "fanout:{questions}:\(id):\(group)", nodeID, "NX", "PX",
                                           String(max(1000, timeoutMilliseconds))])
        let refusal = shards[0].send(command) { result in
            if case .success(.status) = result { return reply(true) }
            reply(false)
        }
        if refusal != nil { reply(false) }
    }

    static func command(_ arguments: [[UInt8]]) -> [UInt8] {
        var output: [UInt8] = []
        RedisCommand.append(arguments, to: &output)
        RedisCommand.terminate(&output)
        return output
    }

    /// A message on a question channel, or nil when `channel` is not one.
    func questionEvent(channel: [UInt8], payload bytes: [UInt8]) -> QuestionEvent?? {
        if channel == Self.questionsChannel {
            // A question's id always holds a dot, so `C` never starts one.
            if bytes.count > 2, bytes[0] == UInt8(ascii: "C"), bytes[1] == UInt8(ascii: " ") {
                return .closed(id: String(decoding: bytes[2...], as: UTF8.self))
            }
            let fields = bytes.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: false)
            guard fields.count == 6, let asker = UInt64(String(decoding: fields[2], as: UTF8.self)),
                  let timeout = UInt64(String(decoding: fields[3], as: UTF8.self)) else { return .some(nil) }
            return .asked(id: String(decoding: fields[0], as: UTF8.self), origin: String(decoding: fields[1], as: UTF8.self),
                          askerConnection: asker, timeoutMilliseconds: timeout,
                          subject: String(decoding: fields[4], as: UTF8.self), payload: Array(fields[5]))
        }
        guard channel == nodeChannel else { return nil }
        return .some(Self.originEvent(bytes))
    }

    /// What a node told this one, the question's origin, on `fanout:node:<id>`: `R`, `G` or `A`, or nil for a
    /// message that is none of them (a count that is not a decimal of at most 32 bits is refused whole).
    static func originEvent(_ bytes: [UInt8]) -> QuestionEvent? {
        let fields = bytes.split(separator: UInt8(ascii: " "), maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count >= 3 else { return nil }
        let id = String(decoding: fields[1], as: UTF8.self)
        let count = UInt32(String(decoding: fields[2], as: UTF8.self)).map(Int.init)
        switch fields[0].first {
        case UInt8(ascii: "R"): return count.map { .report(id: id, asked: $0) }
        case UInt8(ascii: "G"): return count.map { .gone(id: id, count: $0) }
        case UInt8(ascii: "A"):
            return .answer(id: id, responder: String(decoding: fields[2], as: UTF8.self),
                           payload: fields.count > 3 ? Array(fields[3]) : [])
        default: return nil
        }
    }
}
