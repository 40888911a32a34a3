import FanoutEngine
import FanoutRedis

/// The Redis engine behind the server's one engine seam: a publish goes to its subject's shard and is
/// answered later; what comes back numbered reaches `deliveries` (`RedisEngine+Delivery.swift`).
extension RedisEngine: Engine {
    public func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, anyBytes: Bool,
                        receipt: @autoclosure () -> (receipts: any PublishReceipts, ticket: UInt64)) -> PublishOutcome {
        let answer = receipt()
        if let refusal = send(subject: subject, payload: payload, receipts: answer.receipts, ticket: answer.ticket) {
            return .refused(refusal.description)
        }
        return .pending
    }

    /// Batches go out at the end of the loop pass (`PublishQueue`), not per read.
    public func endOfRead() {}

    public var holdsAcknowledgements: Bool { false }

    /// Subscribes in Redis to what this node's subscribers hold (`RedisEngine+Subscriptions.swift`).
    public var followsSubscriptions: Bool { true }

    public func replay(_ request: ReplayRequest, answer: @escaping (Result<EngineReplay, EngineFailure>) -> Void) {
        readReplay(request) { result in
            answer(result
                .map { EngineReplay(answer: $0.answer, following: $0.following.map { ($0.seq, $0.payload) }) }
                .mapError(EngineFailure.init))
        }
    }

    public var trackedSubjects: Int { tracked.count }
}

extension EngineFailure {
    init(_ failure: RedisFailure) {
        if case .outcomeUnknown = failure {
            self.init(failure.description, outcomeUnknown: true)
        } else {
            self.init(failure.description)
        }
    }
}
