import Foundation
import Testing

/// Bytes held for an unfinished BPUB payload count toward `max_memory` like every other byte: its announced
/// length is a promise that decides admission (a header past the bound is refused with `-ERR limit`), the
/// bound's drops weigh the bytes that arrived (unfinished lines too), and the memory of payloads cut off by
/// their connection's close goes back to the system.
@Suite("Unfinished payloads are inside max_memory", .threadPerTestAlone, .timeLimit(.minutes(2)))
struct PayloadMemoryTests {
    /// The report, scaled down: under max_memory 32 MiB, 96 connections each send a 1 MiB BPUB but its last
    /// byte. Without the bound they held 96 MiB; now, past it, the largest holders are dropped and new headers
    /// refused (`-ERR limit` either way), RSS grows by about the bound at most, a bystander is served, the
    /// payloads still held publish when their last byte comes, and after the holders close, RSS comes back down.
    @Test func manyHalfSentPayloadsStayWithinTheBound() throws {
        let bound = 32 << 20
        let length = 1 << 20
        let daemon = try Daemon(environment: ["FANOUTD_MAX_MEMORY": "\(bound)", "FANOUTD_MAX_PENDING_BYTES": "8388608"])
        let bystander = try daemon.client()
        #expect(try bystander.command("PING") == "+PONG")
        let before = try daemon.residentBytes()
        let body = [UInt8](repeating: UInt8(ascii: "p"), count: length - 1)
        var holders: [LineClient] = []
        for _ in 0..<96 {
            let holder = try daemon.client(timeout: 30)
            try holder.send("BPUB big.x \(length)\n")
            try holder.send(body)
            holders.append(holder)
        }
        #expect(try bystander.command("PING") == "+PONG")
        let replies = try firstReplies(holders, timeout: 1000) { try $0.readLine() }
        let admitted = (0..<holders.count).filter { replies[$0] == nil }
        #expect(replies.values.allSatisfy { $0.hasPrefix("-ERR limit ") }, "\(Set(replies.values))")
        #expect(admitted.count >= 16 && admitted.count <= bound / length,
                "\(admitted.count) payloads held under a bound of \(bound / length) MiB")
        let grown = try daemon.residentBytes() - before
        print("half-sent payloads: \(admitted.count) held, RSS grew by \(grown >> 20) MiB")
        #expect(grown < bound + bound / 2, "RSS grew by \(grown) bytes under max_memory=\(bound)")

        // An admitted payload is whole once its last byte comes.
        let finished = holders[admitted[0]]
        try finished.send("p\n")
        #expect(try finished.readLine() == "+OK 0")
        // A refused header's bytes are dropped as they come, its framing kept: once they are all in, it is usable.
        if let refused = replies.first(where: { !$0.value.contains("disconnected") })?.key {
            try holders[refused].send("p\n")
            #expect(try holders[refused].command("PING") == "+PONG")
        }

        for holder in holders { holder.close() }
        #expect(try bystander.command("PING") == "+PONG")
        try eventually(timeout: 10, "the memory of the cut-off payloads went back") {
            try daemon.residentBytes() - before < 8 << 20
        }
    }

    /// Headers alone hold no bytes: connections that announce 1 MiB payloads and send none of them (with a
    /// subscription, so no idle timeout takes them) fill max_memory with promises, which refuse further BPUB
    /// headers, but the bound's drops weigh bytes that arrived, so a subscriber well under its own limit is
    /// not dropped for the server's sake, and PUB goes on.
    @Test func headersAloneGetNoSubscriberDropped() throws {
        let bound = 8 << 20
        let daemon = try Daemon(environment: ["FANOUTD_MAX_MEMORY": "\(bound)", "FANOUTD_MAX_PENDING_BYTES": "2097152",
                                              "FANOUTD_SEND_BUFFER_BYTES": "4096"])
        var announcers: [LineClient] = []
        for _ in 0..<32 {
            let announcer = try daemon.client()
            #expect(try announcer.command("SUB keep") == "+OK 1")
            try announcer.send("BPUB x \(1 << 20)\n")
            announcers.append(announcer)
        }
        let subscriber = try LineClient(port: daemon.port, timeout: 30, receiveBuffer: 4096)
        #expect(try subscriber.readLine().hasPrefix("+HELLO "))
        #expect(try subscriber.command("SUB news") == "+OK 1")
        let publisher = try daemon.client()
        #expect(try publisher.command("PING") == "+PONG")
        // The announcers' promises took the bound: a further header is refused, its bytes dropped.
        try publisher.send("BPUB news \(1 << 20)\n")
        #expect(try publisher.readLine().hasPrefix("-ERR limit "))
        try publisher.send([UInt8](repeating: 0x78, count: 1 << 20) + [0x0A])
        // About 300 KB queued to a reader that does not read yet: far under its own 2 MiB.
        let line = String(repeating: "n", count: 1000)
        try publisher.send((0..<300).map { _ in "PUB news \(line)\n" }.joined())
        for _ in 0..<300 { #expect(try publisher.readLine() == "+OK 1") }
        #expect(try publisher.command("PING") == "+PONG")
        var received = 0
        while received < 300 {
            let push = try subscriber.readLine()
            #expect(push.hasPrefix("MSG news "), "\(push)")
            received += 1
        }
        #expect(infoFields(try publisher.command("INFO"))["memory_drops"] ?? "0" == "0")
        for announcer in announcers { announcer.close() }
    }

    /// An unfinished line counts too, once it is long: 400 connections that each hold 60,000 bytes of a line
    /// with no LF (24 MB) under max_memory 8 MiB. Past the bound, the largest holders are dropped with
    /// `-ERR limit`, RSS grows by about the bound at most, and the memory goes back after they close.
    @Test func unfinishedLinesStayWithinTheBound() throws {
        let bound = 8 << 20
        let daemon = try Daemon(environment: ["FANOUTD_MAX_MEMORY": "\(bound)", "FANOUTD_MAX_PENDING_BYTES": "2097152"])
        let bystander = try daemon.client()
        let before = try daemon.residentBytes()
        let part = [UInt8](repeating: UInt8(ascii: "l"), count: 60_000)
        var holders: [LineClient] = []
        for _ in 0..<400 {
            let holder = try daemon.client(timeout: 30)
            try holder.send([UInt8]("PUB lines.x ".utf8) + part)
            holders.append(holder)
        }
        #expect(try bystander.command("PING") == "+PONG")
        let replies = try firstReplies(holders, timeout: 1000) { try $0.readLine() }
        #expect(!replies.isEmpty && replies.values.allSatisfy { $0.hasPrefix("-ERR limit disconnected: ") },
                "\(Set(replies.values))")
        let grown = try daemon.residentBytes() - before
        print("unfinished lines: \(holders.count - replies.count) held, RSS grew by \(grown >> 20) MiB")
        #expect(grown < bound + bound / 2, "RSS grew by \(grown) bytes under max_memory=\(bound)")
        for holder in holders { holder.close() }
        #expect(try bystander.command("PING") == "+PONG")
        try eventually(timeout: 10, "the memory of the unfinished lines went back") {
            try daemon.residentBytes() - before < 4 << 20
        }
    }
}
