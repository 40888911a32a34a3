import FanoutEngine
import FanoutEventLoop
import FanoutRedis

/// The PUBs on their way to the shards. Per shard, one batch gathers while the previous one is with Redis
/// (group commit): under load batches grow, so Redis's work per subject is shared by more messages, and a
/// PUB arriving on an idle shard still leaves at the end of its loop pass. A full batch leaves at once,
/// whatever is in flight.
///
/// Outcomes are never reported from inside `publish`: a batch refused as it is sent is failed at the end of
/// the loop pass, so a caller never hears of a PUB before it has recorded it.
final class PublishQueue {
    static let batchesInFlightLimit = 1
    /// A batch that grew past this (one message near max_line) is not kept for reuse: spare batches hold
    /// little memory.
    static let spareCapacityLimit = 4 * PublishBatch.maxBytes

    private let shards: [RedisShard]
    /// Per shard, the PUBs being gathered.
    private var gathering: [PublishBatch]
    /// Per shard, batches sent and not answered yet.
    private var inFlight: [Int]
    /// Batches answered, kept for reuse with their capacity (`spareCapacityLimit`).
    private var spares: [PublishBatch] = []
    /// Batches refused when sent, failed at the end of the pass.
    private var refused: [(batch: PublishBatch, failure: RedisFailure)] = []
    /// The command being built, reused (hiredis copies it).
    private var command: [UInt8] = []
    /// Sends what gathered, at the end of the loop pass in which it began.
    private var timer: LoopTimer?
    private var stopped = false

    /// The publish script's SHA on the shards (the same script everywhere).
    var script: [UInt8] = []
    /// The shard epoch this node offers when a shard has none.
    var candidateEpoch: () -> String = { "" }

    init(loop: EventLoop, shards: [RedisShard]) {
        self.shards = shards
        gathering = shards.map { _ in PublishBatch() }
        inFlight = Array(repeating: 0, count: shards.count)
        timer = LoopTimer(loop: loop) { [unowned self] in self.endOfPass() }
    }

    /// Adds a PUB to its shard's batch, or returns why it cannot be sent (nobody is told then).
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, rule: () -> [UInt8],
                 receipts: PublishReceipts, ticket: UInt64) -> RedisFailure? {
        if stopped { return .unavailable("the cluster engine stopped") }
        // One hash of the subject serves for its shard and its group in the batch.
        let hash = SubjectKeys.hash(subject)
        let index = SubjectKeys.shard(ofHash: hash, count: shards.count)
        let batch = gathering[index]
        if let refusal = shards[index].refusal(waitingToBeSent: batch.messages) { return refusal }
        if batch.isEmpty { timer?.fireAtEndOfPass() }
        batch.add(subject: subject, hash: hash, payload: payload, rule: rule, receipts: receipts, ticket: ticket)
        if batch.isFull { send(index) }
        return nil
    }

    /// Fails what is gathered or refused, and takes no more PUBs.
    /// Whether any PUB is being gathered or waits for its answer.
    var isIdle: Bool {
        gathering.allSatisfy(\.isEmpty) && inFlight.allSatisfy { $0 == 0 }
    }

    func stop() {
        stopped = true
        timer = nil
        var failing = refused
        refused.removeAll()
        for index in gathering.indices where !gathering[index].isEmpty {
            failing.append((gathering[index], .unavailable("the cluster engine stopped")))
            gathering[index] = PublishBatch()
        }
        for (batch, failure) in failing { batch.fail(failure) }
    }

    private func endOfPass() {
        let failing = refused
        refused.removeAll()
        for (batch, failure) in failing {
            batch.fail(failure)
            recycle(batch)
        }
        for index in gathering.indices where !gathering[index].isEmpty && inFlight[index] < Self.batchesInFlightLimit {
            send(index)
        }
    }

    private func send(_ index: Int) {
        let batch = gathering[index]
        gathering[index] = spares.popLast() ?? PublishBatch()
        batch.command(script: script, candidateEpoch: candidateEpoch(), into: &command)
        inFlight[index] += 1
        let refusal = shards[index].sendBatch(command, weight: batch.messages) { [unowned self] result in
            self.inFlight[index] -= 1
            batch.answer(result)
            self.recycle(batch)
            if !self.stopped && !self.gathering[index].isEmpty && self.inFlight[index] < Self.batchesInFlightLimit {
                self.send(index)
            }
        }
        if command.capacity > Self.spareCapacityLimit { command = [] }
        if let refusal {
            inFlight[index] -= 1
            refused.append((batch, refusal))
            timer?.fireAtEndOfPass()
        }
    }

    private func recycle(_ batch: PublishBatch) {
        guard spares.count < shards.count, batch.capacity <= Self.spareCapacityLimit else { return }
        batch.reset()
        spares.append(batch)
    }
}
