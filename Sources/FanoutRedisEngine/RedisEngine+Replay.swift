import FanoutEngine
import FanoutRedis

/// RESUME and LAST through the subject's stream, race-free: once the subject's SUBSCRIBE is in effect, live
/// messages are buffered while the script reads the stream; they come back in `following` with the seqs the
/// replay covers left out.
extension RedisEngine {
    /// One replay under way: the live messages buffered meanwhile, and its two halves. The script's answer
    /// comes on the command connection, the marker it publishes on the subscription connection: only when
    /// the marker is here has every message numbered before the answer arrived (the two connections are
    /// read independently, so the answer can overtake them).
    final class ReplayBuffer {
        var messages: [(epoch: String, delivery: Delivery)] = []
        let marker: [UInt8]
        var markerSeen = false
        var answer: ReplayAnswer?
        var finish: ((Result<ReplayResult, RedisFailure>) -> Void)?

        init(marker: [UInt8]) { self.marker = marker }
    }

    /// Fails as unavailable while the shard is down.
    func readReplay(_ request: ReplayRequest, done: @escaping (Result<ReplayResult, RedisFailure>) -> Void) {
        let subject = request.subject
        let shard = shard(of: subject)
        if let refusal = shard.refusal { return done(.failure(refusal)) }
        // Holds the subject for the length of the replay; the caller's own subscription takes over after.
        retain(pattern: subject)
        let entry = tracked[subject]!
        markers &+= 1
        let buffer = ReplayBuffer(marker: Array("sync.\(nodeID).\(markers)".utf8))
        entry.replays.append(buffer)
        buffer.finish = { [unowned self] result in
            guard buffer.finish != nil else { return }
            buffer.finish = nil
            entry.replays.removeAll { $0 === buffer }
            done(result)
            self.release(pattern: subject)
        }
        let run = { [unowned self] in
            self.readStream(request, on: shard, marker: buffer.marker) { result in
                switch result {
                case .success(let answer):
                    buffer.answer = answer
                    self.completeReplay(buffer)
                case .failure(let failure):
                    buffer.finish?(.failure(failure))
                }
            }
        }
        if inEffect(subject, entry) {
            run()
        } else {
            entry.waiters.append { ok in
                ok ? run() : buffer.finish?(.failure(.unavailable("\(shard.endpoint) went away during the replay")))
            }
        }
    }

    /// Finishes a replay once both its answer and its marker are here: the buffered messages after the
    /// answer's last seq follow the replay.
    func completeReplay(_ buffer: ReplayBuffer) {
        guard buffer.markerSeen, let answer = buffer.answer else { return }
        guard buffer.messages.count < Self.replayBufferLimit else {
            buffer.finish?(.failure(.unavailable("too many messages arrived during the replay")))
            return
        }
        var seen = answer.lastSeq
        var following: [Delivery] = []
        for (epoch, delivery) in buffer.messages where epoch == answer.epoch && delivery.seq > seen {
            following.append(delivery)
            seen = delivery.seq
        }
        buffer.finish?(.success(ReplayResult(answer: answer, following: following)))
    }

    /// Runs the replay script and turns its answer into a `ReplayAnswer` within the request's budget.
    func readStream(_ request: ReplayRequest, on shard: RedisShard, marker: [UInt8] = [],
                    done: @escaping (Result<ReplayAnswer, RedisFailure>) -> Void) {
        let subject = request.subject
        let rule = rule(for: subject)
        var mode = "position"
        var clientEpoch = ""
        var number: UInt64 = 0
        switch request.kind {
        case .position: break
        case .after(let epoch, let seq):
            mode = "after"
            clientEpoch = epoch
            number = seq
        case .newest(let count):
            mode = "newest"
            number = min(count, UInt64(rule?.maxMessages ?? 0))
        }
        var arguments = ["EVALSHA", String(decoding: replaySHA, as: UTF8.self), "4"] + SubjectKeys.keys(of: subject)
        arguments += [mode, clientEpoch, String(number), String(Self.milliseconds(rule?.maxAge)),
                      String(expiryMilliseconds(rule)), candidateEpoch, String(rule?.maxMessages ?? 0),
                      String(decoding: marker, as: UTF8.self), String(decoding: SubjectKeys.channel(of: subject), as: UTF8.self),
                      String(max(0, request.budget)), String(7 + subject.utf8.count)]
        let refusal = shard.send(RedisCommand.encode(arguments)) { result in
            switch result {
            case .success(.array(let parts)) where parts.count >= 2:
                done(.success(Self.answer(request, parts: parts)))
            default:
                done(.failure(Self.scriptFailure(result)))
            }
        }
        if let refusal { done(.failure(refusal)) }
    }

    /// Why a script's reply is not the answer expected: Redis's own error or a reply of another shape, as
    /// `unavailable`, or the connection's failure as it is.
    static func scriptFailure(_ result: Result<RedisReply, RedisFailure>) -> RedisFailure {
        switch result {
        case .success(.error(let text)): .unavailable("redis: \(text)")
        case .success(let other): .unavailable("unexpected reply \(other)")
        case .failure(let failure): failure
        }
    }

    /// The reply's figures and lines from the script's answer: the newest messages that fit the budget (the
    /// script keeps to it already; this is checked again, so a line never overruns it). After the client's
    /// position, the missed messages are those between it and the first one replayed: gone from the stream
    /// (count, age) or left out for the budget.
    static func answer(_ request: ReplayRequest, parts: [RedisReply]) -> ReplayAnswer {
        let epoch = parts[0].text ?? ""
        let last = UInt64(parts[1].integer ?? 0)
        var messages: [(UInt64, [UInt8])] = []
        var index = 2
        while index + 1 < parts.count {
            messages.append((UInt64(parts[index].integer ?? 0), parts[index + 1].bytes ?? []))
            index += 2
        }
        var answer = ReplayAnswer(epoch: epoch, lastSeq: last, replayed: 0, missed: 0)
        if case .position = request.kind { return answer }
        var budget = request.budget
        var fitting = 0
        for (seq, payload) in messages.reversed() {
            let size = 4 + request.subject.utf8.count + 1 + String(seq).utf8.count + 1 + payload.count + 1
            guard size <= budget else { break }
            budget -= size
            fitting += 1
        }
        let replayed = messages.suffix(fitting)
        switch request.kind {
        case .after(let clientEpoch, let after) where clientEpoch == epoch && after <= last:
            let firstReplayed = replayed.first?.0 ?? last + 1
            answer.missed = firstReplayed > after + 1 ? firstReplayed - (after + 1) : 0
        case .after:
            answer.missed = nil
        case .newest, .position:
            break
        }
        answer.replayed = fitting
        guard fitting > 0 else { return answer }
        answer.bytes = request.budget - budget
        answer.stream = FetchedReplay(subject: request.subject, messages: replayed.map { (seq: $0.0, payload: $0.1) })
        return answer
    }
}
