@testable import FanoutServer
import Testing

@Suite("ReadGate")
struct ReadGateTests {
    @Test func readingResumesOnlyWhenTheLastStopIsLifted() {
        var gate = ReadGate()
        #expect(gate.isOpen)
        var changed = gate.add(.outputFull)
        #expect(changed)
        changed = gate.add(.outputFull)
        #expect(!changed, "the same stop twice is one stop")
        changed = gate.add(.commandsHeld)
        #expect(changed)
        gate.hold()
        gate.hold()
        changed = gate.lift(.outputFull)
        #expect(changed && !gate.isOpen)
        changed = gate.lift(.commandsHeld)
        #expect(changed && !gate.isOpen, "two subscribers still hold it back")
        changed = gate.release()
        #expect(changed && !gate.isOpen)
        changed = gate.release()
        #expect(changed && gate.isOpen)
        changed = gate.release()
        #expect(!changed, "nobody holds it any more")
        changed = gate.lift(.turnOver)
        #expect(!changed, "a stop never added is not lifted")
    }

    @Test(arguments: [ReadGate.Stops.outputFull, .commandsHeld, .turnOver, .engineHold])
    func closingIsFinal(after stop: ReadGate.Stops) {
        var gate = ReadGate()
        _ = gate.add(stop)
        let closed = gate.add(.closed)
        #expect(closed && gate.isClosed && !gate.isOpen)
        let again = gate.add(.closed)
        #expect(!again, "closing twice closes once")
        let lifted = gate.lift(stop) || gate.lift(.closed)
        #expect(!lifted, "nothing reopens a closed gate")
        let turn = gate.add(.turnOver)
        #expect(!turn)
        gate.hold()
        #expect(gate.holds == 0)
    }

    @Test func holdsAreCountedApartFromStops() {
        var gate = ReadGate()
        for _ in 0..<1_000 { gate.hold() }
        _ = gate.add(.engineHold)
        #expect(gate.holds == 1_000 && gate.stops == .engineHold)
        _ = gate.lift(.engineHold)
        for _ in 0..<999 { _ = gate.release() }
        #expect(gate.holds == 1 && gate.stops.isEmpty && !gate.isOpen)
        _ = gate.release()
        #expect(gate.isOpen)
    }

    /// A server holds a gate per connection: 4 bytes, which fit in the padding after the connection's
    /// subscriptions.
    @Test func aGateTakesFourBytes() {
        #expect(MemoryLayout<ReadGate>.size == 4)
    }
}

import FanoutEventLoop

@Suite("SocketAddress")
struct SocketAddressTests {
    @Test(arguments: [("127.0.0.1:7411", "127.0.0.1:7411"), ("[::1]:80", "[::1]:80"), ("0.0.0.0:0", "0.0.0.0:0")])
    func parsesAndPrints(text: String, expected: String) throws {
        #expect(try SocketAddress(parsing: text).description == expected)
    }

    @Test(arguments: ["nonsense", "1.2.3.4", ":80", "[::1]", "[::1]80", "::1:80"])
    func rejectsMalformedAddresses(text: String) {
        #expect(throws: SystemError.self) { try SocketAddress(parsing: text) }
    }
}
