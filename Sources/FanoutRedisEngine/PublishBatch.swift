import FanoutEngine
import FanoutRedis
#if canImport(Glibc)
import Glibc
#endif

/// The PUBs for one shard gathered during a loop pass or while the previous batch is with Redis
/// (`PublishQueue`), sent as one run of the publish script. Redis's cost per script run is several times a bare PUBLISH, and its
/// calls are made once per subject of the batch, not once per message: a subject's messages are numbered at
/// once and go out in one PUBLISH, so every node receives them together and writes them to its subscribers
/// as one run.
///
/// Messages are grouped by subject, in the order each subject first came; a subject's messages keep their
/// order and get consecutive seqs. Messages of different subjects have no order between them anyway.
///
/// Worst case, stated because a client decides what goes in: a batch holds at most `maxMessages` messages
/// and about `maxBytes` of payload (one message may take it past that), so one script run blocks Redis for
/// O(`maxMessages`) commands at most, and a PUB adds O(1) here: a hash lookup of its subject.
///
/// Everything lives in flat arrays that keep their capacity when the batch is reset and used again, so a
/// batch allocates nothing per message or per subject once it has served a few times.
final class PublishBatch {
    static let maxMessages = 256
    static let maxBytes = 64 * 1024

    /// One subject's messages: its bytes in `subjects`, its history rule, and its messages as a list
    /// through `Message.next`.
    struct Group {
        let subjectStart: Int
        let subjectCount: Int
        let hash: UInt64
        /// max_messages, max_age and the idle expiry as bulk strings: the subject's history rule.
        let rule: [UInt8]
        var count = 0
        /// A payload holds an LF: the PUBLISH frames the payloads by length (`EngineScripts.publish`).
        var framed = false
        var first = -1
        var last = -1
    }

    /// One message: its payload in `payloads`, who is told of it, and the next of its subject's messages.
    struct Message {
        let payloadStart: Int
        let payloadCount: Int
        let group: Int
        let receipts: PublishReceipts
        let ticket: UInt64
        var next = -1
    }

    private(set) var groups: [Group] = []
    private var list: [Message] = []
    private var subjects: [UInt8] = []
    private var payloads: [UInt8] = []
    /// Subject hash → the index of its group (a collision falls back to a scan, see `group(of:)`).
    private var groupsByHash: [UInt64: Int] = [:]

    var messages: Int { list.count }
    var bytes: Int { payloads.count }
    var isEmpty: Bool { list.isEmpty }
    /// The payload bytes it keeps room for when reset.
    var capacity: Int { payloads.capacity }
    var isFull: Bool { list.count >= Self.maxMessages || payloads.count >= Self.maxBytes }

    /// Adds a message; `hash` is the subject's (`SubjectKeys.hash`), and `rule` is asked for its encoded
    /// history arguments when it is new here.
    func add(subject: UnsafeRawBufferPointer, hash: UInt64, payload: UnsafeRawBufferPointer, rule: () -> [UInt8],
             receipts: PublishReceipts, ticket: UInt64) {
        let index = group(of: subject, hash: hash) ?? {
            groups.append(Group(subjectStart: subjects.count, subjectCount: subject.count, hash: hash, rule: rule()))
            subjects.append(contentsOf: subject)
            if groupsByHash[hash] == nil { groupsByHash[hash] = groups.count - 1 }
            return groups.count - 1
        }()
        let position = list.count
        list.append(Message(payloadStart: payloads.count, payloadCount: payload.count, group: index,
                            receipts: receipts, ticket: ticket))
        payloads.append(contentsOf: payload)
        if groups[index].last >= 0 { list[groups[index].last].next = position } else { groups[index].first = position }
        groups[index].last = position
        groups[index].count += 1
        if !groups[index].framed, let base = payload.baseAddress, memchr(base, 0x0A, payload.count) != nil {
            groups[index].framed = true
        }
    }

    /// Empties the batch, keeping its capacity.
    func reset() {
        groups.removeAll(keepingCapacity: true)
        list.removeAll(keepingCapacity: true)
        subjects.removeAll(keepingCapacity: true)
        payloads.removeAll(keepingCapacity: true)
        groupsByHash.removeAll(keepingCapacity: true)
    }

    private func subjectMatches(_ group: Group, _ subject: UnsafeRawBufferPointer) -> Bool {
        group.subjectCount == subject.count
            && subjects[group.subjectStart..<(group.subjectStart + group.subjectCount)].elementsEqual(subject)
    }

    /// The subject's group, checking the newest first (a publisher's run of one subject).
    private func group(of subject: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
        if let last = groups.indices.last, groups[last].hash == hash, subjectMatches(groups[last], subject) {
            return last
        }
        guard let index = groupsByHash[hash] else { return nil }
        if subjectMatches(groups[index], subject) { return index }
        // Two subjects with one hash: rare enough for a scan.
        return groups.firstIndex { $0.hash == hash && subjectMatches($0, subject) }
    }

    /// The EVALSHA of the publish script for the whole batch (see `EngineScripts.publish`).
    func command(script: [UInt8], candidateEpoch: String, into output: inout [UInt8]) {
        output.removeAll(keepingCapacity: true)
        output.reserveCapacity(payloads.count + groups.count * 128 + list.count * 8 + 128)
        let keys = 2 + 2 * groups.count
        RedisCommand.appendHeader(count: 3 + keys + 1 + 5 * groups.count + list.count, to: &output)
        RedisCommand.appendBulk("EVALSHA", to: &output)
        script.withUnsafeBytes { RedisCommand.appendBulk($0, to: &output) }
        RedisCommand.appendBulk(String(keys), to: &output)
        output.append(contentsOf: SubjectKeys.shardKeysEncoded)
        subjects.withUnsafeBytes { subjects in
            for group in groups {
                let subject = UnsafeRawBufferPointer(rebasing: subjects[group.subjectStart..<(group.subjectStart + group.subjectCount)])
                SubjectKeys.appendSubjectKeys(of: subject, to: &output)
            }
            RedisCommand.appendBulk(candidateEpoch, to: &output)
            payloads.withUnsafeBytes { payloads in
                for group in groups {
                    let subject = UnsafeRawBufferPointer(rebasing: subjects[group.subjectStart..<(group.subjectStart + group.subjectCount)])
                    SubjectKeys.appendChannel(of: subject, to: &output)
                    RedisCommand.appendBulk(group.framed ? "\(group.count)b" : String(group.count), to: &output)
                    output.append(contentsOf: group.rule)
                    var next = group.first
                    while next >= 0 {
                        let message = list[next]
                        RedisCommand.appendBulk(UnsafeRawBufferPointer(rebasing: payloads[message.payloadStart..<(message.payloadStart + message.payloadCount)]), to: &output)
                        next = message.next
                    }
                }
            }
        }
        RedisCommand.terminate(&output)
    }

    /// Answers every message, in the order they came: its subject's receivers from the script's reply (one
    /// count per subject), or the failure for all.
    func answer(_ result: Result<RedisReply, RedisFailure>) {
        if case .success(.array(let counts)) = result, counts.count == groups.count {
            for message in list {
                message.receipts.published(ticket: message.ticket, .success(counts[message.group].integer ?? 0))
            }
            return
        }
        fail(RedisEngine.scriptFailure(result))
    }

    func fail(_ failure: RedisFailure) {
        let failed = EngineFailure(failure)
        for message in list { message.receipts.published(ticket: message.ticket, .failure(failed)) }
    }
}
