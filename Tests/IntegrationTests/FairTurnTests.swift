import Foundation
import Testing

/// A connection's commands run for at most `Server.turn` per loop pass: the rest wait in its input buffer while
/// others are served, and go on by themselves on a later pass (`Fanout+Turns.swift`).
@Suite("Fair turns", .threadPerTest, .timeLimit(.minutes(2)))
struct FairTurnTests {
    @Test func aPipelinedFloodGoesOnAfterItsTurnsAndMissesNothing() throws {
        let daemon = try Daemon()
        let flood = try LineClient(port: daemon.port)
        _ = try flood.readLine()
        let other = try LineClient(port: daemon.port)
        _ = try other.readLine()
        #expect(try other.command("SUB flood.x") == "+OK 1")
        // 30,000 PUBs in one send: far more work than one turn, and replies (180 KB) under read_pause_bytes, so
        // that only turns stop the reading.
        let count = 30_000
        try flood.send(String(repeating: "PUB flood.x hi\n", count: count))
        var replies = 0
        while replies < count, try flood.readLine() == "+OK 1" { replies += 1 }
        #expect(replies == count, "every PUB is answered, in order, though its turns ended")
        var delivered = 0
        while delivered < count, try other.readLine().hasPrefix("MSG flood.x ") { delivered += 1 }
        #expect(delivered == count)
        #expect(try other.command("PING") == "+PONG")
        #expect(infoFields(try other.command("INFO"))["published"] == String(count))
    }
}
