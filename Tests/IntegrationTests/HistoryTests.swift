import Foundation
import Testing

/// The history extension (protocol 1.1): epochs, RESUME and LAST, typed by hand as with `nc`.
@Suite("History and resume", .threadPerTest, .timeLimit(.minutes(2)))
struct HistoryTests {
    private func historyDaemon(_ environment: [String: String] = [:]) throws -> Daemon {
        try Daemon(arguments: ["--config", try fixture("history.yaml")], environment: environment)
    }

    /// A client that read the greeting, and the epoch it named.
    private func connect(_ daemon: Daemon, timeout: TimeInterval = 10) throws -> (LineClient, epoch: String) {
        let client = try LineClient(port: daemon.port, timeout: timeout)
        let greeting = try client.readLine()
        let epoch = try #require(greeting.split(separator: " ").first { $0.hasPrefix("epoch=") }?.dropFirst(6))
        return (client, String(epoch))
    }

    private func publish(_ client: LineClient, _ subject: String, _ payloads: some Sequence<Int>) throws {
        let lines = payloads.map { "PUB \(subject) m\($0)\n" }
        try client.send(lines.joined())
        for _ in lines { #expect(try client.readLine().hasPrefix("+OK ")) }
    }

    @Test func resumeAndLastReplayWhatWasMissedThenFollowLive() throws {
        let daemon = try historyDaemon()
        let (publisher, epoch) = try connect(daemon)
        try publish(publisher, "orders.a", 1...10)
        let (client, _) = try connect(daemon)
        #expect(try client.command("RESUME orders.a") == "+OK 1 epoch=\(epoch) seq=10 replayed=0 missed=0")
        #expect(try client.command("RESUME orders.a \(epoch) 7") == "+OK 1 epoch=\(epoch) seq=10 replayed=3 missed=0")
        #expect(try (0..<3).map { _ in try client.readLine() } == ["MSG orders.a 8 m8", "MSG orders.a 9 m9", "MSG orders.a 10 m10"])
        // Five are kept: from 0, the first five are gone for good.
        #expect(try client.command("RESUME orders.a \(epoch) 0") == "+OK 1 epoch=\(epoch) seq=10 replayed=5 missed=5")
        #expect(try (0..<5).map { _ in try client.readLine() }.first == "MSG orders.a 6 m6")
        // A position from another numbering, or past the last seq, means nothing here.
        #expect(try client.command("RESUME orders.a old-epoch 3").hasSuffix("replayed=5 missed=unknown"))
        for _ in 0..<5 { _ = try client.readLine() }
        #expect(try client.command("RESUME orders.a \(epoch) 11").hasSuffix("replayed=5 missed=unknown"))
        for _ in 0..<5 { _ = try client.readLine() }
        #expect(try client.command("LAST orders.a 2") == "+OK 1 epoch=\(epoch) seq=10 replayed=2 missed=0")
        #expect(try client.readLine() == "MSG orders.a 9 m9")
        #expect(try client.readLine() == "MSG orders.a 10 m10")
        #expect(try client.command("LAST orders.a") == "+OK 1 epoch=\(epoch) seq=10 replayed=1 missed=0")
        #expect(try client.readLine() == "MSG orders.a 10 m10")
        #expect(try client.command("LAST orders.a 0") == "+OK 1 epoch=\(epoch) seq=10 replayed=0 missed=0")
        // Live messages follow the replay, from seq+1.
        try publish(publisher, "orders.a", [11])
        #expect(try client.readLine() == "MSG orders.a 11 m11")
        // A subject without history still tells where it stands and what was missed.
        try publish(publisher, "plain.x", 1...3)
        #expect(try client.command("RESUME plain.x \(epoch) 1") == "+OK 2 epoch=\(epoch) seq=3 replayed=0 missed=2")
        #expect(try client.command("RESUME never.published") == "+OK 3 epoch=\(epoch) seq=0 replayed=0 missed=0")
        // A sensor keeps its last value: LAST is how a late joiner gets it.
        try publish(publisher, "sensors.kitchen", 1...3)
        #expect(try client.command("LAST sensors.kitchen 5").hasSuffix("seq=3 replayed=1 missed=0"))
        #expect(try client.readLine() == "MSG sensors.kitchen 3 m3")
        let info = infoFields(try client.command("INFO"))
        #expect(info["epoch"] == epoch)
        #expect(info["history_subjects"] == "2")
        #expect(info["history_messages"] == "6")
        #expect(Int(info["history_bytes"] ?? "") ?? 0 > 0)
        #expect(info["history_evicted"] == "0")
    }

    @Test func historyIsBoundedByAgeAndBytes() throws {
        // Age: aging.> keeps messages for a second; the expiry lets go of them without further publishes.
        let daemon = try historyDaemon()
        let (client, epoch) = try connect(daemon)
        try publish(client, "aging.a", 1...3)
        #expect(infoFields(try client.command("INFO"))["history_messages"] == "3")
        try eventually(timeout: 10, "aged-out messages are dropped") {
            infoFields(try client.command("INFO"))["history_messages"] == "0"
        }
        #expect(try client.command("RESUME aging.a \(epoch) 0") == "+OK 1 epoch=\(epoch) seq=3 replayed=0 missed=3")

        // Bytes: a small history_max_bytes pushes out the oldest messages across subjects.
        let small = try historyDaemon(["FANOUTD_HISTORY_MAX_BYTES": "20000"])
        let (writer, smallEpoch) = try connect(small)
        let payload = String(repeating: "p", count: 900)
        try writer.send((0..<30).map { "PUB burst.\($0 % 3) \($0) \(payload)\n" }.joined())
        for _ in 0..<30 { _ = try writer.readLine() }
        let info = infoFields(try writer.command("INFO"))
        #expect(Int(info["history_bytes"] ?? "") ?? .max <= 20000)
        #expect(Int(info["history_evicted"] ?? "") ?? 0 > 0)
        let kept = Int(info["history_messages"] ?? "") ?? 0
        #expect(kept > 10 && kept < 30, "\(kept)")
        // The newest were kept: burst.2's last message (seq 10) is there.
        #expect(try writer.command("LAST burst.2 1") == "+OK 1 epoch=\(smallEpoch) seq=10 replayed=1 missed=0")
        #expect(try writer.readLine().hasPrefix("MSG burst.2 10 29 "))
    }

    @Test func aReplayIsCutToTheOutputLimitNeverADrop() throws {
        let daemon = try historyDaemon(["FANOUTD_MAX_LINE": "2048", "FANOUTD_MAX_PENDING_BYTES": "20000"])
        let (publisher, epoch) = try connect(daemon)
        let payload = String(repeating: "x", count: 1000)
        try publisher.send((1...100).map { "PUB burst.big \($0) \(payload)\n" }.joined())
        for _ in 0..<100 { _ = try publisher.readLine() }
        let (client, _) = try connect(daemon)
        let reply = try client.command("RESUME burst.big \(epoch) 0")
        let fields = infoFields(reply)
        let replayed = try #require(Int(fields["replayed"] ?? ""))
        #expect(replayed > 10 && replayed < 20, "\(reply)")
        #expect(fields["missed"] == String(100 - replayed), "the oldest that did not fit are counted as missed")
        for expected in (101 - replayed)...100 {
            #expect(try client.readLine().hasPrefix("MSG burst.big \(expected) \(expected) "))
        }
        #expect(try client.command("PING") == "+PONG", "still connected")
        #expect(infoFields(try client.command("INFO"))["slow_consumers"] == "0")
        let last = infoFields(try client.command("LAST burst.big 100"))
        #expect(last["missed"] == "0", "LAST never reports missed messages")
        #expect(Int(last["replayed"] ?? "") ?? 0 < 100)
    }

    @Test func aLongReplayGoesOutInSlicesWhileOthersAreServedAndLiveMessagesWait() throws {
        let daemon = try historyDaemon()
        let (publisher, epoch) = try connect(daemon, timeout: 30)
        let (bystander, _) = try connect(daemon)
        let total = 60_000
        let payload = String(repeating: "r", count: 80)
        try publisher.send((1...total).map { _ in "PUB burst.long \(payload)\n" }.joined())
        for _ in 0..<total { _ = try publisher.readLine() }
        let (client, _) = try connect(daemon, timeout: 30)
        // About 6 MB of replay: it is sent a slice per loop pass, and the client reads none of it yet.
        #expect(try client.command("RESUME burst.long \(epoch) 0")
                == "+OK 1 epoch=\(epoch) seq=\(total) replayed=\(total) missed=0")
        // Published during the replay: queued to the client behind it, counted as delivered to it.
        try publisher.send("PUB burst.long live\n")
        #expect(try publisher.readLine() == "+OK 1")
        let during = infoFields(try bystander.command("INFO"))
        #expect(during["replays_active"] == "1", "another client is answered, and the PUB was, during the replay")
        for expected in 1...total {
            let line = try client.readLine()
            guard line == "MSG burst.long \(expected) \(payload)" else {
                Issue.record("expected seq \(expected), got \(line.prefix(40))")
                return
            }
        }
        #expect(try client.readLine() == "MSG burst.long \(total + 1) live")
        #expect(try client.command("PING") == "+PONG", "its commands go on after the replay")
        #expect(infoFields(try bystander.command("INFO"))["replays_active"] == "0")
    }

    @Test func aResumeInTheMiddleOfABurstIsOneContiguousRun() throws {
        let daemon = try historyDaemon()
        let (publisher, epoch) = try connect(daemon, timeout: 30)
        let total = 100_000
        let burst = (1...total).map { "PUB burst.live \($0)\n" }.joined()
        let (client, _) = try connect(daemon, timeout: 30)
        let sent = ThreadResult()
        Thread.detachNewThread {
            do { try publisher.send(burst) } catch {}
            sent.set(1)
        }
        // Ask while the burst is being published: the reply names seq s, the replay holds 1...s, and live
        // messages go on from s+1.
        try eventually("the burst has begun") { infoFields(try client.command("INFO"))["published"] != "0" }
        let reply = infoFields(try client.command("RESUME burst.live \(epoch) 0"))
        let replayed = try #require(Int(reply["replayed"] ?? ""))
        #expect(replayed > 0, "asked after the first publishes")
        #expect(reply["seq"] == String(replayed))
        #expect(reply["missed"] == "0")
        for expected in 1...total {
            let line = try client.readLine()
            guard line == "MSG burst.live \(expected) \(expected)" else {
                Issue.record("expected seq \(expected), got \(line.prefix(40)) (replayed \(replayed))")
                return
            }
        }
        #expect(sent.wait(timeout: 30) == 1)
    }

    @Test func aRestartIsANewEpoch() throws {
        let first = try historyDaemon()
        let (publisher, oldEpoch) = try connect(first)
        try publish(publisher, "orders.r", 1...3)
        let port = first.port
        first.signal(SIGTERM)
        #expect(first.waitForExit(timeout: 15) == 0)
        let second = try Daemon(arguments: ["--config", try fixture("history.yaml")], listen: ["127.0.0.1:\(port)"])
        let (client, newEpoch) = try connect(second)
        #expect(newEpoch != oldEpoch)
        #expect(try client.command("RESUME orders.r \(oldEpoch) 3") == "+OK 1 epoch=\(newEpoch) seq=0 replayed=0 missed=unknown")
    }

    @Test func badInputIsRefusedClearly() throws {
        let daemon = try historyDaemon()
        let (client, epoch) = try connect(daemon)
        let cases: [(String, String)] = [
            ("RESUME", "-ERR syntax "),
            ("RESUME orders.*", "-ERR bad-subject "),
            ("RESUME orders.a \(epoch)", "-ERR syntax "),
            ("RESUME orders.a \(epoch) -1", "-ERR syntax "),
            ("RESUME orders.a \(epoch) +3", "-ERR syntax "),
            ("RESUME orders.a \(epoch) 1e3", "-ERR syntax "),
            ("RESUME orders.a \(epoch) 18446744073709551616", "-ERR syntax "),
            ("RESUME orders.a \(epoch) 1 extra", "-ERR syntax "),
            ("LAST", "-ERR syntax "),
            ("LAST orders.a -1", "-ERR syntax "),
            ("LAST orders.a 99999999999999999999", "-ERR syntax "),
            ("LAST orders.a 1 2", "-ERR syntax "),
            ("LAST >", "-ERR bad-subject "),
        ]
        for (line, prefix) in cases {
            #expect(try client.command(line).hasPrefix(prefix), "\(line)")
        }
        // The largest seq is a position past the last one: it means nothing here, and is not an error.
        #expect(try client.command("RESUME orders.a \(epoch) 18446744073709551615").hasSuffix("missed=unknown"))
        #expect(try client.command("LAST orders.a 18446744073709551615").hasSuffix("replayed=0 missed=0"))
        #expect(try client.command("HELP").contains(" RESUME LAST"))
    }

    @Test func reloadAppliesChangedRules() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.yaml").path
        func write(_ rules: String) throws { try "history:\n\(rules)".write(toFile: path, atomically: true, encoding: .utf8) }
        try write("  - subjects: \"keep.>\"\n    max_messages: 10\n  - subjects: \"gone.>\"\n    max_messages: 10\n")
        let daemon = try Daemon(arguments: ["--config", path])
        let (client, _) = try connect(daemon)
        try publish(client, "keep.a", 1...10)
        try publish(client, "gone.a", 1...10)
        #expect(infoFields(try client.command("INFO"))["history_messages"] == "20")

        // Shrinking a rule trims at once; removing one drops what it kept.
        try write("  - subjects: \"keep.>\"\n    max_messages: 2\n")
        daemon.signal(SIGHUP)
        try eventually("the reload trimmed and dropped") {
            infoFields(try client.command("INFO"))["history_messages"] == "2"
        }
        #expect(try client.command("LAST keep.a 10").hasSuffix("seq=10 replayed=2 missed=0"))
        _ = try client.readLine()
        _ = try client.readLine()

        // A bad rule is rejected at reload, and the running rules stay.
        try write("  - subjects: \"keep.>.x\"\n    max_messages: -1\n")
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10)
        #expect(infoFields(try client.command("INFO"))["history_messages"] == "2")

        // And refused at start, with exit status 78.
        let bad = try Daemon(arguments: ["--config", path], waitForListening: false)
        #expect(bad.waitForExit(timeout: 20) == 78)
        #expect(try bad.stderr.waitForLine(containing: "history:", timeout: 5).contains("keep.>.x"))
    }
}
