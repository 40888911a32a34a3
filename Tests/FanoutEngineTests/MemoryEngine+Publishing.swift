@testable import FanoutEngine

/// Publishing through the engine seam as the server does, for tests that check numbering and history.
extension MemoryEngine {
    /// Numbers `payload` on `subject` and returns its seq.
    func publish(_ subject: String, _ payload: [UInt8]) -> UInt64 {
        var name = subject
        let outcome = name.withUTF8 { subjectBytes in
            payload.withUnsafeBytes { payloadBytes in
                publish(subject: UnsafeRawBufferPointer(subjectBytes), payload: payloadBytes, anyBytes: false,
                        receipt: (NoReceipts.shared, 0))
            }
        }
        guard case .numbered(let seq, _, _) = outcome else { fatalError("the memory engine numbers at once") }
        return seq
    }
}

/// Receipts nobody reads: the memory engine answers at once and never asks for them.
final class NoReceipts: PublishReceipts {
    nonisolated(unsafe) static let shared = NoReceipts()
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {}
}
