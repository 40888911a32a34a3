@testable import FanoutServer
import Logging
import Testing

/// The memory guard's admission by promises, on a server built in the test process (nothing is bound).
@Suite("MemoryGuard admission")
struct MemoryGuardTests {
    private func server(maxMemory: Int) throws -> Server {
        var configuration = ServerConfiguration()
        configuration.limits.maxMemory = maxMemory
        return try Server(configuration: configuration, logger: Logger(label: "test"))
    }

    @Test func aPromisePastTheBoundIsRefusedAndCountedUntilTheHeldBytesGo() throws {
        let server = try server(maxMemory: 1 << 20)
        let memory = server.memory!
        #expect(memory.reserveHeld(600 << 10), "within the bound")
        #expect(!memory.reserveHeld(600 << 10), "this one would pass the bound with the first")
        #expect(server.stats.limitRefusals == 1)
        #expect(memory.payloadBytes == 600 << 10, "a refused promise holds nothing")
        memory.releaseHeld(600 << 10)
        #expect(memory.payloadBytes == 0)
        #expect(memory.reserveHeld(600 << 10), "what was let go may be promised again")
        #expect(server.stats.limitRefusals == 1)
    }

    @Test func withoutABoundEveryPromiseIsAdmitted() throws {
        let server = try server(maxMemory: 0)
        #expect(server.memory.reserveHeld(1 << 40))
        #expect(!server.memory.indexWouldPassBound(adding: 1 << 30))
        #expect(server.stats.limitRefusals == 0)
    }

    @Test func theIndexIsRefusedOnlyPastTheBound() throws {
        let server = try server(maxMemory: 10 * IndexMemory.bytesPerSubscription)
        #expect(!server.memory.indexWouldPassBound(adding: 10), "exactly at the bound is allowed")
        #expect(server.memory.indexWouldPassBound(adding: 11))
        #expect(!server.memory.refuses(adding: 10 * IndexMemory.bytesPerSubscription))
        #expect(server.memory.refuses(adding: 10 * IndexMemory.bytesPerSubscription + 1))
    }
}
