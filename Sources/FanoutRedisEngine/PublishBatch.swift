import FanoutRedis

/// Who is told of PUBs' outcomes, by ticket: one per publishing connection, so that a PUB costs no closure.
public protocol PublishReceipts: AnyObject {
    /// The PUB under `ticket` is in Redis, `receivers` nodes had subscribers (`success`), or it failed.
    func published(ticket: UInt64, _ result: Result<Int64, RedisFailure>)
}

/// The PUBs for one shard gathered during a loop pass, sent as one run of the publish script when the pass
/// ends (or once full). Redis's cost per script run is several times a bare PUBLISH, and each of its calls
/// is made once per subject of the batch, not once per message: a subject's messages are numbered by one
/// HINCRBY and go out in one PUBLISH, so every node receives them together and writes them to its
/// subscribers as one run.
///
/// Messages are grouped by subject, in the order each subject first came; a subject's messages keep their
/// order and get consecutive seqs. Messages of different subjects have no order between them anyway.
///
/// Worst case, stated because a client decides what goes in: a batch holds at most `maxMessages` messages
/// and about `maxBytes` of payload (one message may take it past that), so one script run blocks Redis for
/// O(`maxMessages`) commands at most, and a PUB adds O(1) here: a hash lookup of its subject.
final class PublishBatch {
    static let maxMessages = 256
    static let maxBytes = 64 * 1024

    /// One subject's messages.
    struct Group {
        let subject: [UInt8]
        let hash: UInt64
        /// max_messages, max_age and the idle expiry as bulk strings: the subject's history rule.
        let rule: [UInt8]
        /// The payloads as bulk strings, in order.
        var payloads: [UInt8] = []
        /// Who is told of each message's outcome, and under which ticket.
        var receipts: [(receiver: PublishReceipts, ticket: UInt64)] = []
    }

    private(set) var groups: [Group] = []
    /// Subject hash → the index of its group (a collision falls back to a scan, see `group(of:)`).
    private var groupsByHash: [UInt64: Int] = [:]
    private(set) var messages = 0
    private(set) var bytes = 0

    var isEmpty: Bool { messages == 0 }
    var isFull: Bool { messages >= Self.maxMessages || bytes >= Self.maxBytes }

    /// Adds a message; `rule` is asked for the subject's encoded history arguments when it is new here.
    func add(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, rule: () -> [UInt8],
             receipts: PublishReceipts, ticket: UInt64) {
        let hash = SubjectKeys.hash(subject)
        let index = group(of: subject, hash: hash) ?? {
            groups.append(Group(subject: Array(subject), hash: hash, rule: rule()))
            if groupsByHash[hash] == nil { groupsByHash[hash] = groups.count - 1 }
            return groups.count - 1
        }()
        RedisCommand.appendBulk(payload, to: &groups[index].payloads)
        groups[index].receipts.append((receipts, ticket))
        messages += 1
        bytes += payload.count
    }

    /// The subject's group, checking the newest first (a publisher's run of one subject).
    private func group(of subject: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
        if let last = groups.indices.last, groups[last].hash == hash, groups[last].subject.elementsEqual(subject) {
            return last
        }
        guard let index = groupsByHash[hash] else { return nil }
        if groups[index].subject.elementsEqual(subject) { return index }
        // Two subjects with one hash: rare enough for a scan.
        return groups.firstIndex { $0.hash == hash && $0.subject.elementsEqual(subject) }
    }

    /// The EVALSHA of the publish script for the whole batch (see `EngineScripts.publish`).
    func command(script: [UInt8], candidateEpoch: String) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes + groups.count * 128 + messages * 8 + 128)
        let keys = 2 + 2 * groups.count
        RedisCommand.appendHeader(count: 3 + keys + 1 + 5 * groups.count + messages, to: &output)
        RedisCommand.appendBulk("EVALSHA", to: &output)
        script.withUnsafeBytes { RedisCommand.appendBulk($0, to: &output) }
        RedisCommand.appendBulk(String(keys), to: &output)
        output.append(contentsOf: SubjectKeys.shardKeysEncoded)
        for group in groups {
            group.subject.withUnsafeBytes { SubjectKeys.appendSubjectKeys(of: $0, to: &output) }
        }
        RedisCommand.appendBulk(candidateEpoch, to: &output)
        for group in groups {
            group.subject.withUnsafeBytes { SubjectKeys.appendChannel(of: $0, to: &output) }
            RedisCommand.appendBulk(String(group.receipts.count), to: &output)
            output.append(contentsOf: group.rule)
            output.append(contentsOf: group.payloads)
        }
        RedisCommand.terminate(&output)
        return output
    }

    /// Answers every message: each subject's `receivers` from the script's reply, or the failure for all.
    func answer(_ result: Result<RedisReply, RedisFailure>) {
        if case .success(.array(let parts)) = result, parts.count == 2 * groups.count {
            for (index, group) in groups.enumerated() {
                let receivers = parts[2 * index + 1].integer ?? 0
                for (receiver, ticket) in group.receipts { receiver.published(ticket: ticket, .success(receivers)) }
            }
            return
        }
        fail(RedisEngine.scriptFailure(result))
    }

    func fail(_ failure: RedisFailure) {
        for group in groups {
            for (receiver, ticket) in group.receipts { receiver.published(ticket: ticket, .failure(failure)) }
        }
    }
}
