import Foundation
import Testing

/// Clients that try to make the server do unbounded work or hold unbounded memory. Each attack is scaled to
/// run in seconds; while it runs, another client's PING must be answered within a second (a correctness
/// bound: the loop is not frozen), and the server must keep serving.
@Suite("Hostile clients", .threadPerTest, .timeLimit(.minutes(3)))
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

    /// Connections that ask for a long replay and never read: each replay is encoded only as fast as its
    /// client reads, so the server holds a few slices per connection, not the replay, and others are served.
    @Test func replaysToClientsThatDoNotReadWaitForThemInsteadOfFillingMemory() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("history.yaml")],
                                environment: ["FANOUTD_SEND_BUFFER_BYTES": "4096", "FANOUTD_WRITE_TIMEOUT": "60"])
        let publisher = try daemon.client(timeout: 30)
        let payload = String(repeating: "r", count: 1000)
        // 20,000 messages of 1 KB kept (20 MB): each LAST below asks for all of it, up to the 8 MiB output limit.
        for batch in 0..<20 {
            try publisher.send((0..<1000).map { "PUB burst.one \(batch)-\($0) \(payload)\n" }.joined())
            for _ in 0..<1000 { _ = try publisher.readLine() }
        }
        let observer = try daemon.client()
        let before = try daemon.residentBytes()
        var stalled: [LineClient] = []
        for _ in 0..<40 {
            let client = try LineClient(port: daemon.port, timeout: 30, receiveBuffer: 4096)
            try client.send("LAST burst.one 20000\n")
            stalled.append(client)
        }
        // Each replay has stopped at what its client has not read.
        try eventually(timeout: 20, "every replay waits for its client") {
            infoFields(try observer.command("INFO"))["replays_waiting"] == "40"
        }
        var worstPing = 0.0
        for _ in 0..<50 { worstPing = max(worstPing, try pingSeconds(observer)) }
        let grown = try daemon.residentBytes() - before
        // Encoded ahead, the replays would hold 40 x 8 MiB; paced, a few slices each.
        #expect(grown < 64 << 20, "RSS grew by \(grown >> 20) MiB")
        #expect(worstPing < 0.05, "PING took \(worstPing) s")
        // A client that reads after all gets its whole replay, in order.
        let reader = stalled[0]
        reader.setOption(SOL_SOCKET, SO_RCVBUF, 1 << 20)
        #expect(try reader.readLine().hasPrefix("+HELLO "))
        let reply = try reader.readLine()
        let replayed = try #require(Int(infoFields(reply)["replayed"] ?? ""), "\(reply)")
        var previous: UInt64 = 0
        for _ in 0..<replayed {
            let line = try reader.readLine()
            let seq = try #require(UInt64(line.split(separator: " ")[2]))
            #expect(previous == 0 || seq == previous + 1)
            previous = seq
        }
        #expect(previous == 20000)
        for client in stalled { client.close() }
        try eventually(timeout: 10, "the departed replays let go of their connections") {
            let info = infoFields(try observer.command("INFO"))
            return info["connection_objects"] == info["clients"]
        }
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

    /// Runs `attack` on a thread of its own while `observer` pings every 20 ms; returns the slowest PING.
    private func slowestPing(_ observer: LineClient, during attack: @escaping @Sendable () throws -> Void) throws -> Double {
        let finished = ThreadResult()
        Thread.detachNewThread {
            do { try attack() } catch { Issue.record("the attack failed: \(error)") }
            finished.set(1)
        }
        var slowest = 0.0
        while !finished.isSet {
            slowest = max(slowest, try pingSeconds(observer))
            usleep(20_000)
        }
        _ = finished.wait(timeout: 1)
        return slowest
    }

    @Test func newSubjectsIntoAFullSequenceTableStayCheap() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_TRACKED_SUBJECTS": "20000"])
        let logger = try daemon.client(timeout: 60)
        #expect(try logger.command("SUB a.>") == "+OK 1")
        // The logger never reads: its deliveries wait in the kernel and its output, well under the limits.
        let publisher = try daemon.client(timeout: 60)
        let observer = try daemon.client()
        let fill = (0..<20_000).map { "PUB a.\($0) x\n" }.joined()
        try publisher.send(fill)
        for _ in 0..<20_000 { _ = try publisher.readLine() }
        let slowest = try slowestPing(observer) {
            let started = Date()
            try publisher.send((0..<2000).map { "PUB b.\($0) x\n" }.joined())
            for _ in 0..<2000 { _ = try publisher.readLine() }
            #expect(Date().timeIntervalSince(started) < 5, "2,000 publishes to new subjects into a full table")
        }
        #expect(slowest < 1, "another client's PING waited \(slowest)s")
        // Every subject is subscribed through a.>: the table keeps them up to twice its limit, no further.
        let tracked = Int(infoFields(try observer.command("INFO"))["tracked_subjects"] ?? "") ?? 0
        #expect(tracked > 20000 && tracked <= 40000, "\(tracked)")
    }

    @Test func deepWildcardPatternsAreCappedAndPublishesStayBounded() throws {
        let daemon = try Daemon()
        let attacker = try daemon.client(timeout: 60)
        let seventeen = Array(repeating: "*", count: 2).joined(separator: ".") + "." +
            Array(repeating: "a", count: 15).joined(separator: ".")
        #expect(try attacker.command("SUB \(seventeen)").hasPrefix("-ERR limit "), "17 tokens")
        #expect(try attacker.command("SUB *.*.*.*.q").hasPrefix("-ERR limit "), "4 stars")
        #expect(try attacker.command("SUB *.*.*.a.q") == "+OK 1", "3 stars")
        // Every pattern the limits allow that nearly matches a.a.a...: up to 3 stars among 15 tokens, then q.
        var patterns: [String] = []
        for first in 0..<15 {
            for second in first..<15 {
                for third in second..<15 {
                    var tokens = Array(repeating: "a", count: 15)
                    tokens[first] = "*"
                    tokens[second] = "*"
                    tokens[third] = "*"
                    patterns.append((tokens + ["q"]).joined(separator: "."))
                }
            }
        }
        let unique = Array(Set(patterns))
        for batch in stride(from: 0, to: unique.count, by: 500) {
            let reply = try attacker.command("SUB " + unique[batch..<min(batch + 500, unique.count)].joined(separator: " "))
            #expect(reply.hasPrefix("+OK "), "\(reply.prefix(80))")
        }
        let observer = try daemon.client()
        let near = Array(repeating: "a", count: 16).joined(separator: ".")
        let deep = Array(repeating: "a", count: 128).joined(separator: ".")
        let slowest = try slowestPing(observer) {
            let started = Date()
            let burst = (0..<500).map { "PUB \($0 % 2 == 0 ? near : deep) x\n" }.joined()
            try attacker.send(burst)
            for _ in 0..<500 { #expect(try attacker.readLine() == "+OK 0") }
            #expect(Date().timeIntervalSince(started) < 5, "500 publishes against \(unique.count) near-matching patterns")
        }
        #expect(slowest < 1, "another client's PING waited \(slowest)s")
    }

    @Test func listingsAndSweepsOfManySubscriptionsRunInSlices() throws {
        let daemon = try Daemon()
        let observer = try daemon.client()
        // 200,000 exact subscriptions over 20 connections.
        var holders: [LineClient] = []
        for connection in 0..<20 {
            let holder = try daemon.client(timeout: 60)
            // Two lines of 5,000: a line is at most max_line (64 KiB).
            for half in 0..<2 {
                let patterns = (half * 5000..<(half + 1) * 5000).map { "s\(connection).\($0)" }
                #expect(try holder.command("SUB " + patterns.joined(separator: " ")) == "+OK \((half + 1) * 5000)")
            }
            holders.append(holder)
        }
        let asker = try daemon.client(timeout: 60)
        let slowest = try slowestPing(observer) {
            try asker.send(String(repeating: "CHANNELS zzz.>\n", count: 10))
            for _ in 0..<10 { #expect(try asker.readLine() == "+OK 0") }
            try asker.send("CHANNELS s3.*\n")
            let listing = try asker.readLine()
            #expect(listing.hasPrefix("+OK 10000 s3.0=1 s3.1=1 s3.10=1 "), "\(listing.prefix(60))")
            #expect(listing.split(separator: " ").count == 1 + 1 + 1000, "at most 1,000 listed")
            for _ in 0..<10 {
                #expect(try asker.command("SUB x") == "+OK 1")
                #expect(try asker.command("UNSUB x") == "+OK 0")
                #expect(try asker.command("INFO").hasPrefix("+OK version="))
            }
            #expect(try asker.command("CHANNELS s7.42") == "+OK 1 s7.42=1", "a concrete filter is one lookup")
        }
        #expect(slowest < 1, "another client's PING waited \(slowest)s")
        // Departures are swept in slices: the patterns of closed connections leave the count soon after.
        for holder in holders.prefix(10) { holder.close() }
        try eventually(timeout: 20, "the departed connections' patterns are swept") {
            infoFields(try observer.command("INFO"))["subjects"] == "100000"
        }
    }

    @Test func aClientThatLeavesDuringASlicedCommandIsLetGo() throws {
        let daemon = try Daemon()
        let holder = try daemon.client(timeout: 30)
        for half in 0..<2 {
            let patterns = (half * 5000..<(half + 1) * 5000).map { "h.\($0)" }
            #expect(try holder.command("SUB " + patterns.joined(separator: " ")) == "+OK \((half + 1) * 5000)")
        }
        let observer = try daemon.client()
        for round in 0..<5 {
            // A SUB that runs in slices and a CHANNELS scan, then the client is gone before they finish.
            let leaver = try daemon.client()
            let patterns = (0..<5000).map { "l\(round).\($0)" }
            try leaver.send("SUB " + patterns.joined(separator: " ") + "\nCHANNELS h.*\n")
            leaver.reset()
        }
        #expect(try pingSeconds(observer) < 1)
        try eventually("every departed connection object is gone") {
            let info = infoFields(try observer.command("INFO"))
            return info["clients"] == "2" && info["connection_objects"] == "2"
        }
    }
}
