@testable import FanoutEngine

/// Publishing through the engine seam as the server does, for tests that check numbering and history.
extension MemoryEngine {
    /// Numbers `payload` on `subject` and returns its seq (no fan-out is attached).
    func publish(_ subject: String, _ payload: [UInt8]) -> UInt64 {
        var name = subject
        name.withUTF8 { subjectBytes in
            payload.withUnsafeBytes { payloadBytes in
                _ = publish(subject: UnsafeRawBufferPointer(subjectBytes), payload: payloadBytes, anyBytes: false,
                            receipt: (NoReceipts.shared, 0))
            }
        }
        return lastNumbered
    }
}

/// Receipts nobody reads: the memory engine answers at once and never asks for them.
final class NoReceipts: PublishReceipts {
    nonisolated(unsafe) static let shared = NoReceipts()
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {}
}
