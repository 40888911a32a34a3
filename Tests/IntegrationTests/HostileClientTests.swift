import Foundation
import Testing

/// Clients that try to make the server do unbounded work or hold unbounded memory. Each attack is scaled to
/// run in seconds; while it runs, another client's PING must be answered within a second (a correctness
/// bound: the loop is not frozen), and the server must keep serving.
@Suite("Hostile clients", .timeLimit(.minutes(3)))
struct HostileClientTests {
    /// Sends PING on `client` and returns the seconds until `+PONG`.
    private func pingSeconds(_ client: LineClient) throws -> Double {
        let started = Date()
        #expect(try client.command("PING") == "+PONG")
        return Date().timeIntervalSince(started)
    }

    @Test func stalledSubscribersPastMaxMemoryAreDroppedLargestFirst() throws {
        let daemon = try Daemon(environment: [
            "FANOUTD_MAX_PENDING_BYTES": String(2 << 20),
            "FANOUTD_MAX_MEMORY": String(8 << 20),
            "FANOUTD_SEND_BUFFER_BYTES": "4096",
            "FANOUTD_WRITE_TIMEOUT": "60",
        ])
        // Eight readers that never read, each on a subject of its own: each may hold max_pending_bytes (2 MiB),
        // 16 MiB together, twice the server-wide bound.
        var stalled: [LineClient] = []
        for number in 0..<8 {
            let client = try LineClient(port: daemon.port, timeout: 30, receiveBuffer: 4096)
            #expect(try client.readLine().hasPrefix("+HELLO "))
            #expect(try client.command("SUB stall.\(number)") == "+OK 1")
            stalled.append(client)
        }
        let observer = try daemon.client()
        let publisher = try daemon.client(timeout: 30)
        let payload = String(repeating: "m", count: 1000)
        // Fill every stalled reader up to ~1.5 MiB, under its own limit: only the server-wide bound can act.
        for number in 0..<8 {
            let lines = (0..<1500).map { "PUB stall.\(number) \($0) \(payload)\n" }.joined()
            try publisher.send(lines)
            for _ in 0..<1500 { _ = try publisher.readLine() }
        }
        try eventually(timeout: 10, "the bound dropped the largest backlogs") {
            Int(infoFields(try observer.command("INFO"))["memory_drops"] ?? "0") ?? 0 > 0
        }
        let info = infoFields(try observer.command("INFO"))
        let dropped = Int(info["memory_drops"] ?? "0") ?? 0
        #expect(dropped >= 2 && dropped < 8, "dropped until under nine tenths of the bound, not everyone: \(dropped)")
        #expect(Int(info["backlog_bytes"] ?? "") ?? Int.max <= 8 << 20)
        #expect(try pingSeconds(observer) < 1)
        // A dropped reader finds the notice after what it had been sent; the others get all 1,500 messages.
        var notices = 0
        for (number, client) in stalled.enumerated() {
            client.setOption(SOL_SOCKET, SO_RCVBUF, 1 << 20)
            for read in 0...1500 {
                guard let line = try client.readLineOrEOF() else { break }
                if line.hasPrefix("-ERR slow-consumer") {
                    #expect(line.contains("max_memory"))
                    #expect(read < 500, "the backlog was discarded, not flushed first: \(read) lines came before")
                    notices += 1
                    break
                }
                guard line.hasPrefix("MSG stall.") else {
                    Issue.record("unexpected line \(line.prefix(60))")
                    break
                }
                if line.hasPrefix("MSG stall.\(number) 1500 ") { break }
            }
            client.close()
        }
        #expect(notices == dropped)
    }

    @Test func aHugeSubLineIsDeduplicatedAndRefusedQuickly() throws {
        let daemon = try Daemon()
        let attacker = try daemon.client(timeout: 30)
        let observer = try daemon.client()
        // 64 KiB of distinct patterns: more than max_subscriptions allows, refused whole.
        var patterns: [String] = []
        var length = 4
        var number = 0
        while length + 8 < 65_000 {
            let pattern = String(number, radix: 36)
            patterns.append(pattern)
            length += pattern.utf8.count + 1
            number += 1
        }
        let started = Date()
        let reply = try attacker.command("SUB " + patterns.joined(separator: " "))
        #expect(reply.hasPrefix("-ERR limit max_subscriptions=10000"), "\(reply)")
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(try pingSeconds(observer) < 1)
        // Duplicates count once: the same 5,000 patterns twice fit in the limit.
        let half = Array(patterns.prefix(5000))
        #expect(try attacker.command("SUB " + (half + half).joined(separator: " ")) == "+OK 5000")
    }

    @Test func idleConnectionsWithoutSubscriptionsAreClosed() throws {
        let daemon = try Daemon(environment: ["FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT": "1"])
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB kept") == "+OK 1")
        let idle = try daemon.client()
        let started = Date()
        #expect(try idle.readLine() == "-ERR idle-timeout disconnected: nothing received for idle_unsubscribed_timeout")
        #expect(try idle.readLineOrEOF() == nil)
        #expect(Date().timeIntervalSince(started) < 5)
        // The subscriber, silent as long, stays; dropping its last subscription starts its clock.
        #expect(try subscriber.command("PING") == "+PONG")
        #expect(try subscriber.command("UNSUB") == "+OK 0")
        #expect(try subscriber.readLine().hasPrefix("-ERR idle-timeout "))
    }
}
