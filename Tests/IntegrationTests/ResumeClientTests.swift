import Foundation
import Testing

/// `fanout sub` across lost connections, with protocol 1.1's history (RESUME, LAST) and without it.
@Suite("Resuming subscribers", .threadPerTest, .timeLimit(.minutes(2)))
struct ResumeClientTests {
    @Test func aSubscriberCutTwentyTimesGetsEveryMessageOnceInOrder() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("resume.yaml")])
        let proxy = try CuttingProxy(forwardingTo: daemon.port)
        let total = 3000
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(proxy.port)", "--count", String(total), "orders.x"])
        try waitForSubscribers(daemon, subject: "orders.x")

        // 3,000 numbered messages in batches of 10 every 10 ms: publishing outlasts the cuts.
        let publisher = try daemon.client()
        let published = Thread.detachNewThreadWithResult {
            var next = 1
            do {
                while next <= total {
                    let batch = next..<min(next + 10, total + 1)
                    try publisher.send(batch.map { "PUB orders.x \($0)\n" }.joined())
                    for _ in batch {
                        guard try publisher.readLine().hasPrefix("+OK ") else { return -next }
                    }
                    next = batch.upperBound
                    usleep(10_000)
                }
            } catch {
                return -next
            }
            return total
        }
        // A cut whenever the subscriber has printed another 140 lines, on the connection it has by then (a
        // replay may print past two marks at once): 20 of them, spread over the publishing.
        let cuts = 20
        for cut in 1...cuts {
            // The payloads are 1, 2, 3...: the first line containing "140" is line 140.
            _ = try sub.stdout.waitForLine(containing: String(cut * 140), timeout: 20)
            try proxy.waitForConnections(cut, timeout: 20)
            proxy.cut()
        }
        #expect(published.wait(timeout: 60) == total)
        // --count: the subscriber exits after 3,000 lines, so a duplicate would have pushed one out.
        let result = sub.finish()

        #expect(result.status == 0)
        #expect(result.stdout == (1...total).map(String.init), "every message exactly once, in order")
        // One connection, then one per cut (the last cut may find the subscriber done and gone).
        #expect(proxy.accepted >= cuts)
        #expect(result.stderr.contains { $0.hasPrefix("fanout: recovered ") && $0.hasSuffix(" on orders.x") })
        #expect(!result.stderr.contains { $0.contains("missed") || $0.contains("gap on") }, "\(result.stderr)")
    }

    @Test func aRestartedServerIsReportedAsANewNumbering() throws {
        let config = try fixture("resume.yaml")
        var daemon: Daemon? = try Daemon(arguments: ["--config", config])
        let port = daemon!.port
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(port)", "orders.e"])
        try waitForSubscribers(daemon!, subject: "orders.e")
        #expect(try daemon!.client().command("PUB orders.e before") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "before", timeout: 10)

        daemon!.signal(SIGTERM)
        #expect(daemon!.waitForExit(timeout: 15) == 0)
        _ = try sub.stderr.waitForLine(containing: "reconnecting in", timeout: 10)
        daemon = nil
        let restarted = try Daemon(arguments: ["--config", config], listen: ["127.0.0.1:\(port)"])
        let report = try sub.stderr.waitForLine(containing: "missed messages on orders.e", timeout: 20)
        #expect(report == "fanout: missed messages on orders.e (unknown: the server's numbering restarted)")
        _ = try sub.stderr.waitForLine(containing: "resubscribed to 1 subject", timeout: 10)

        // Seq 1 of the new numbering is new, not a duplicate of the old seq 1.
        #expect(try restarted.client().command("PUB orders.e after") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "after", timeout: 10)
        #expect(sub.stdout.all == ["before", "after"])
        #expect(!sub.stderr.all.contains { $0.contains("gap on") }, "the resume report replaces the gap report")
    }

    @Test func lastPrintsTheNewestKeptMessagesThenLiveOnes() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("resume.yaml")])
        let publisher = try daemon.client()
        for number in 1...5 { #expect(try publisher.command("PUB orders.y \(number)") == "+OK 0") }
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(daemon.port)", "--last", "2", "orders.y"])
        _ = try sub.stdout.waitForLine(containing: "5", timeout: 10)
        // LAST subscribed before it replayed: the next publish reaches the subscriber.
        #expect(try publisher.command("PUB orders.y 6") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "6", timeout: 10)
        #expect(sub.stdout.all == ["4", "5", "6"])
        #expect(sub.stderr.all.isEmpty)
    }

    @Test func lastRefusesPatterns() throws {
        let result = try FanoutTool.run(["sub", "--last", "2", "orders.y", "orders.>"])
        #expect(result.status == 64)
        #expect(result.stderr.contains { $0.contains("--last needs concrete subjects: 'orders.>' is a pattern") },
                "\(result.stderr)")
    }

    /// A subject with no history still answers RESUME, counting what was published while the client was away.
    @Test func withoutHistoryAResumeCountsWhatWasMissed() throws {
        let daemon = try Daemon()
        let proxy = try CuttingProxy(forwardingTo: daemon.port)
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(proxy.port)", "orders.z"])
        try waitForSubscribers(daemon, subject: "orders.z")
        let publisher = try daemon.client()
        #expect(try publisher.command("PUB orders.z 1") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "1", timeout: 10)

        // Two messages go out while the subscriber's next connection is held at the proxy.
        proxy.cut(holding: true)
        _ = try sub.stderr.waitForLine(containing: "reconnecting in", timeout: 10)
        for number in 2...3 { #expect(try publisher.command("PUB orders.z \(number)").hasPrefix("+OK ")) }
        proxy.release()
        let missed = try sub.stderr.waitForLine(containing: "missed", timeout: 20)
        #expect(missed == "fanout: missed 2 messages on orders.z (history too short)")
        _ = try sub.stderr.waitForLine(containing: "resubscribed to 1 subject", timeout: 10)
        #expect(try publisher.command("PUB orders.z 4") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "4", timeout: 10)

        // Nothing published during the next outage: nothing missed.
        proxy.cut()
        let recovered = try sub.stderr.waitForLine(containing: "recovered", timeout: 20)
        #expect(recovered == "fanout: recovered 0 messages on orders.z")
        _ = try sub.stderr.waitForLine(containing: "resubscribed to 1 subject", after: 1, timeout: 10)
        #expect(try publisher.command("PUB orders.z 5") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "5", timeout: 10)
        #expect(sub.stdout.all == ["1", "4", "5"])
    }

    /// Subjects met through a wildcard are resumed too, ahead of the wildcard's SUB, and nothing repeats.
    @Test func subjectsUnderAWildcardAreResumed() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("resume.yaml")])
        let proxy = try CuttingProxy(forwardingTo: daemon.port)
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(proxy.port)", "--format", "line", "orders.*"])
        try waitForSubscribers(daemon, subject: "orders.*")
        let publisher = try daemon.client()
        #expect(try publisher.command("PUB orders.a a1") == "+OK 1")
        #expect(try publisher.command("PUB orders.b b1") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "b1", timeout: 10)

        proxy.cut(holding: true)
        _ = try sub.stderr.waitForLine(containing: "reconnecting in", timeout: 10)
        for payload in ["a2", "a3"] { #expect(try publisher.command("PUB orders.a \(payload)").hasPrefix("+OK ")) }
        proxy.release()
        let recovered = try sub.stderr.waitForLine(containing: "recovered 2 messages", timeout: 20)
        #expect(recovered == "fanout: recovered 2 messages on orders.a")
        _ = try sub.stderr.waitForLine(containing: "recovered 0 messages on orders.b", timeout: 10)
        _ = try sub.stderr.waitForLine(containing: "resubscribed to 1 subject", timeout: 10)
        #expect(try publisher.command("PUB orders.b b2") == "+OK 1")
        #expect(try publisher.command("PUB orders.c c1") == "+OK 1")
        _ = try sub.stdout.waitForLine(containing: "c1", timeout: 10)
        #expect(sub.stdout.all == [
            "MSG orders.a 1 a1", "MSG orders.b 1 b1", "MSG orders.a 2 a2", "MSG orders.a 3 a3", "MSG orders.b 2 b2",
            "MSG orders.c 1 c1",
        ])
        #expect(infoFields(try publisher.command("INFO"))["subscriptions"] == "3",
                "the wildcard, and orders.a and orders.b as resumed")
    }

    /// A server without protocol 1.1 (no epoch in its greeting) gets SUB, a SUB again after a reconnect, and
    /// gap reports, as before.
    @Test func aServerWithoutHistoryGetsSubAndGapReports() throws {
        let server = try ScriptedServer()
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(server.port)", "orders.o", "news.*"])
        let first = try server.accept()
        try first.send("+HELLO fanout/1 old-server auth=none\n")
        #expect(try first.readLine() == "SUB orders.o news.*")
        try first.send("+OK 2\nMSG orders.o 1 one\nMSG orders.o 2 two\n")
        _ = try sub.stdout.waitForLine(containing: "two", timeout: 10)
        first.reset()

        let second = try server.accept()
        try second.send("+HELLO fanout/1 old-server auth=none\n")
        #expect(try second.readLine() == "SUB orders.o news.*")
        try second.send("+OK 2\nMSG orders.o 1 again\n")
        let gap = try sub.stderr.waitForLine(containing: "gap on orders.o", timeout: 10)
        #expect(gap == "fanout: gap on orders.o: expected seq 3, got 1")
        _ = try sub.stdout.waitForLine(containing: "again", timeout: 10)
        #expect(sub.stdout.all == ["one", "two", "again"], "a restarted 1.0 server's seq 1 is not dropped")
        #expect(sub.stderr.all.contains("fanout: resubscribed to 2 subjects"))
    }
}
