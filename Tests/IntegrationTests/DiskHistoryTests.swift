import Foundation
import Testing

/// History on disk (`history_dir`): real processes stopped with SIGTERM or killed with SIGKILL and started
/// again on the same directory, then asked to RESUME from positions taken before.
@Suite("History on disk survives restarts", .threadPerTest, .timeLimit(.minutes(2)))
struct DiskHistoryTests {
    /// A fresh directory under the system's temporary one, removed by `cleanUp`.
    private final class Scratch {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-disk-\(UUID().uuidString)")
        var history: String { root.appendingPathComponent("history").path }

        init() throws { try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: root) }

        /// The newest segment file.
        func lastSegment() throws -> String {
            let names = try FileManager.default.contentsOfDirectory(atPath: history).filter { $0.hasSuffix(".seg") }.sorted()
            return history + "/" + (try #require(names.last))
        }
    }

    private func start(_ scratch: Scratch, fsync: String = "everysec") throws -> Daemon {
        try Daemon(arguments: ["--config", try fixture("history.yaml")],
                   environment: ["FANOUTD_HISTORY_DIR": scratch.history, "FANOUTD_HISTORY_FSYNC": fsync])
    }

    private func connect(_ daemon: Daemon) throws -> (LineClient, epoch: String) {
        let client = try LineClient(port: daemon.port, timeout: 10)
        let greeting = try client.readLine()
        let epoch = try #require(greeting.split(separator: " ").first { $0.hasPrefix("epoch=") }?.dropFirst(6))
        return (client, String(epoch))
    }

    /// Publishes `m<n>` for each n; waits for every `+OK`.
    private func publish(_ client: LineClient, _ subject: String, _ numbers: some Sequence<Int>) throws {
        let lines = numbers.map { "PUB \(subject) m\($0)\n" }
        try client.send(lines.joined())
        for _ in lines { #expect(try client.readLine().hasPrefix("+OK ")) }
    }

    private func stop(_ daemon: Daemon) throws {
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
    }

    private func kill9(_ daemon: Daemon) {
        daemon.signal(SIGKILL)
        _ = daemon.waitForExit(timeout: 20)
    }

    @Test func aCleanRestartKeepsTheEpochTheNumberingAndEveryRetainedMessage() throws {
        let scratch = try Scratch()
        let first = try start(scratch)
        let (publisher, epoch) = try connect(first)
        try publish(publisher, "orders.a", 1...10)
        try publish(publisher, "plain.x", 1...3)
        try stop(first)

        let second = try start(scratch)
        let (client, sameEpoch) = try connect(second)
        #expect(sameEpoch == epoch)
        #expect(try client.command("RESUME orders.a \(epoch) 7") == "+OK 1 epoch=\(epoch) seq=10 replayed=3 missed=0")
        #expect(try (0..<3).map { _ in try client.readLine() } == ["MSG orders.a 8 m8", "MSG orders.a 9 m9", "MSG orders.a 10 m10"])
        // orders.> keeps five: from 0, the first five are gone, as before the restart.
        #expect(try client.command("RESUME orders.a \(epoch) 0") == "+OK 1 epoch=\(epoch) seq=10 replayed=5 missed=5")
        #expect(try (0..<5).map { _ in try client.readLine() } == (6...10).map { "MSG orders.a \($0) m\($0)" })
        // A subject without history keeps its numbering too.
        #expect(try client.command("RESUME plain.x \(epoch) 1") == "+OK 2 epoch=\(epoch) seq=3 replayed=0 missed=2")
        let (publisher2, _) = try connect(second)
        try publish(publisher2, "orders.a", [11])
        #expect(try client.readLine() == "MSG orders.a 11 m11")
        let info = infoFields(try client.command("INFO"))
        #expect(Int(info["history_disk_bytes"] ?? "") ?? 0 > 0)
        #expect(info["history_write_queue"] != nil && info["history_fsync_lag_ms"] != nil)
        try stop(second)

        // And again: the numbering goes on from 11.
        let third = try start(scratch)
        let (client3, _) = try connect(third)
        #expect(try client3.command("RESUME orders.a \(epoch) 10") == "+OK 1 epoch=\(epoch) seq=11 replayed=1 missed=0")
        #expect(try client3.readLine() == "MSG orders.a 11 m11")
    }

    @Test func aKillWithFsyncAlwaysLosesNothingAcknowledged() throws {
        let scratch = try Scratch()
        let first = try start(scratch, fsync: "always")
        let (publisher, epoch) = try connect(first)
        try publish(publisher, "burst.a", 1...200)
        // A QUIT right after a PUB still gets the PUB's acknowledgement first, once it is synced.
        let quitter = try LineClient(port: first.port, timeout: 10)
        _ = try quitter.readLine()
        try quitter.send("PUB burst.q q1\nQUIT\n")
        #expect(try quitter.readUntilClosed() == ["+OK 0", "+OK bye"])
        kill9(first)

        let second = try start(scratch, fsync: "always")
        let (client, sameEpoch) = try connect(second)
        #expect(sameEpoch == epoch)
        #expect(try client.command("RESUME burst.a \(epoch) 150") == "+OK 1 epoch=\(epoch) seq=200 replayed=50 missed=0")
        #expect(try (0..<50).map { _ in try client.readLine() } == (151...200).map { "MSG burst.a \($0) m\($0)" })
        #expect(second.stderr.all.contains { $0.contains("crash, fsync always: epochs kept") })
    }

    /// With `always`, subscribers get a message only once its record is synced, like its publisher's `+OK`:
    /// a connection that subscribes to what it publishes reads its `+OK` before its own message (a message
    /// written ahead of the disk would come first, as the acknowledgement waits about a group commit), and
    /// RESUME's reply and replay wait the same way.
    @Test func withFsyncAlwaysDeliveriesWaitForTheDiskToo() throws {
        let scratch = try Scratch()
        let daemon = try start(scratch, fsync: "always")
        let (client, epoch) = try connect(daemon)
        #expect(try client.command("SUB orders.self") == "+OK 1")
        try client.send((1...20).map { "PUB orders.self m\($0)\n" }.joined())
        var acknowledged = 0
        var messages: [String] = []
        for _ in 0..<40 {
            let line = try client.readLine()
            if line == "+OK 1" {
                acknowledged += 1
            } else {
                messages.append(line)
                #expect(acknowledged >= messages.count, "\(line) came before its +OK")
            }
        }
        #expect(messages == (1...20).map { "MSG orders.self \($0) m\($0)" })
        let (other, _) = try connect(daemon)
        #expect(try other.command("SUB orders.self") == "+OK 1")
        try publish(client, "orders.self", 21...21)
        #expect(try client.readLine() == "MSG orders.self 21 m21")
        #expect(try other.readLine() == "MSG orders.self 21 m21")
        #expect(try other.command("LAST orders.self 2") == "+OK 1 epoch=\(epoch) seq=21 replayed=2 missed=0")
        #expect(try (0..<2).map { _ in try other.readLine() } == ["MSG orders.self 20 m20", "MSG orders.self 21 m21"])
        try stop(daemon)
    }

    /// With `always`, a message of a subject without history waits behind output held for the disk: a
    /// publisher's messages reach a subscriber in publish order across subjects, and a RESUME's reply comes
    /// before the message published after it.
    @Test func withFsyncAlwaysNothingOvertakesHeldOutput() throws {
        let scratch = try Scratch()
        let daemon = try start(scratch, fsync: "always")
        let (subscriber, _) = try connect(daemon)
        #expect(try subscriber.command("SUB orders.m plain.m") == "+OK 2")
        let (publisher, _) = try connect(daemon)
        try publisher.send("PUB orders.m 1\nPUB plain.m 2\nPUB orders.m 3\nPUB plain.m 4\n")
        for _ in 1...4 { #expect(try publisher.readLine() == "+OK 1") }
        #expect(try (0..<4).map { _ in try subscriber.readLine() }
                == ["MSG orders.m 1 1", "MSG plain.m 1 2", "MSG orders.m 2 3", "MSG plain.m 2 4"])
        let (resumer, _) = try connect(daemon)
        try resumer.send("RESUME plain.y\nPUB plain.y hi\n")
        #expect(try resumer.readLine().hasPrefix("+OK 1 epoch="))
        let rest = try (0..<2).map { _ in try resumer.readLine() }
        #expect(Set(rest) == ["MSG plain.y 1 hi", "+OK 1"], "\(rest)")
        try stop(daemon)
    }

    /// With `always`, a LAST whose replay is large, while live messages keep coming, is paced by what waits
    /// for the disk too: its client gets the reply and the replay, never a slow-consumer drop.
    @Test func withFsyncAlwaysALargeReplayIsNotASlowConsumer() throws {
        let scratch = try Scratch()
        let daemon = try Daemon(arguments: ["--config", try fixture("history.yaml")],
                                environment: ["FANOUTD_HISTORY_DIR": scratch.history, "FANOUTD_HISTORY_FSYNC": "always",
                                              "FANOUTD_MAX_PENDING_BYTES": "1048576"])
        let (publisher, _) = try connect(daemon)
        let payload = String(repeating: "k", count: 1000)
        for batch in 0..<20 {
            try publisher.send((0..<100).map { "PUB burst.big \(batch * 100 + $0)-\(payload)\n" }.joined())
            for _ in 0..<100 { #expect(try publisher.readLine() == "+OK 0") }
        }
        let (client, _) = try connect(daemon)
        // The client asks, then reads nothing until the live messages are all published: what the replay and
        // they take must stay within its limit meanwhile.
        try client.sendLine("LAST burst.big 5000")
        let live = Thread.detachNewThreadWithResult {
            do {
                // Pipelined, as a busy publisher does: the live messages land while the replay is encoded.
                for round in 0..<5 {
                    try publisher.send((0..<10).map { "PUB burst.big live-\(round * 10 + $0)-\(payload)\n" }.joined())
                    for _ in 0..<10 { guard try publisher.readLine().hasPrefix("+OK ") else { return -1 } }
                }
                return 50
            } catch {
                return -2
            }
        }
        #expect(live.wait(timeout: 60) == 50)
        let reply = try client.readLine()
        #expect(reply.hasPrefix("+OK 1 epoch=") && !reply.contains("replayed=0"), "\(reply)")
        let replayed = Int(reply.split(separator: " ").first { $0.hasPrefix("replayed=") }?.dropFirst(9) ?? "") ?? 0
        for _ in 0..<replayed { #expect(try client.readLine().hasPrefix("MSG burst.big ")) }
        // The live messages follow the replay; the connection is still there, and nothing was refused.
        try client.sendLine("PING after")
        var following: [String] = []
        while true {
            let line = try client.readLine()
            if line == "+PONG after" { break }
            following.append(line)
        }
        #expect(following.allSatisfy { $0.hasPrefix("MSG burst.big ") }, "\(following.prefix(3))")
        try stop(daemon)
    }

    @Test func aKillWithFsyncEverysecNeverReusesASeqUnderTheOldEpoch() throws {
        let scratch = try Scratch()
        let first = try start(scratch)
        let (publisher, epoch) = try connect(first)
        try publish(publisher, "burst.a", 1...100)
        try publish(publisher, "plain.x", 1...3)
        kill9(first)

        let second = try start(scratch)
        let (client, greetingEpoch) = try connect(second)
        #expect(greetingEpoch == epoch)
        // The old position means nothing now: the subject has a new epoch, and missed is unknown.
        let reply = try client.command("RESUME burst.a \(epoch) 100")
        let fields = infoFields(reply)
        let subjectEpoch = try #require(fields["epoch"])
        #expect(subjectEpoch != epoch && subjectEpoch.hasPrefix(epoch + "."))
        #expect(fields["missed"] == "unknown")
        // What survived is replayed as it was, and the numbering goes on after it.
        let replayed = try #require(Int(fields["replayed"] ?? ""))
        let seq = try #require(Int(fields["seq"] ?? ""))
        #expect(replayed == seq)
        #expect(try (0..<replayed).map { _ in try client.readLine() } == (1...max(1, replayed)).prefix(replayed).map { "MSG burst.a \($0) m\($0)" })
        let (publisher2, _) = try connect(second)
        try publish(publisher2, "burst.a", [seq + 1])
        #expect(try client.readLine() == "MSG burst.a \(seq + 1) m\(seq + 1)")
        // A subject without history lost its numbering: a new epoch for it too.
        let plain = try client.command("RESUME plain.x \(epoch) 3")
        #expect(plain.contains("missed=unknown") && !plain.contains("epoch=\(epoch) "), "\(plain)")
    }

    @Test func aTruncatedTailIsCutAtTheLastWholeRecord() throws {
        let scratch = try Scratch()
        let first = try start(scratch)
        let (publisher, epoch) = try connect(first)
        try publish(publisher, "orders.t", 1...3)
        try stop(first)
        // A record cut short: its header promises 100 bytes, 10 follow.
        let segment = try scratch.lastSegment()
        let handle = try #require(FileHandle(forWritingAtPath: segment))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([100, 0, 0, 0, 1, 2, 3, 4] + [UInt8](repeating: 7, count: 10)))
        try handle.close()

        let second = try start(scratch)
        let (client, _) = try connect(second)
        #expect(try client.command("RESUME orders.t \(epoch) 0") == "+OK 1 epoch=\(epoch) seq=3 replayed=3 missed=0")
        #expect(try (0..<3).map { _ in try client.readLine() } == (1...3).map { "MSG orders.t \($0) m\($0)" })
        #expect(second.stderr.all.contains { $0.contains("cut 18 bytes after the last whole record") })
    }

    @Test func aDamagedSegmentIsMovedAsideAndItsSubjectsStartUnderANewEpoch() throws {
        let scratch = try Scratch()
        let first = try start(scratch)
        let (publisher, epoch) = try connect(first)
        try publish(publisher, "orders.d", 1...3)
        try stop(first)
        // One payload byte changed: the record is whole but fails its checksum.
        let segment = try scratch.lastSegment()
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
        bytes[bytes.count / 2] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: segment))

        let second = try start(scratch)
        let (client, _) = try connect(second)
        let reply = try client.command("RESUME orders.d \(epoch) 3")
        #expect(reply.contains("missed=unknown") && !reply.contains("epoch=\(epoch) "), "\(reply)")
        #expect(second.stderr.all.contains { $0.contains("damaged record") && $0.contains("damaged/") })
        let aside = scratch.history + "/damaged/" + URL(fileURLWithPath: segment).lastPathComponent
        #expect(FileManager.default.fileExists(atPath: aside))
        // The server goes on: new messages are numbered after what it knew.
        try publish(client, "orders.d", [4])
        #expect(try client.readLine().hasPrefix("MSG orders.d "))
    }

    @Test func aDirectoryThatCannotBeMadeIsAStartupErrorThatNamesIt() throws {
        let scratch = try Scratch()
        let file = scratch.root.appendingPathComponent("not-a-directory").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let result = try runDaemon(["--config", try fixture("history.yaml"), "--listen", "127.0.0.1:0"],
                                   environment: ["FANOUTD_HISTORY_DIR": file + "/history"])
        #expect(result.status == 73)
        #expect(result.stderr.contains("history_dir: create directory \(file)"), "\(result.stderr)")
    }

    @Test func aSecondServerOnTheSameDirectoryIsRefused() throws {
        let scratch = try Scratch()
        let first = try start(scratch)
        let result = try runDaemon(["--config", try fixture("history.yaml"), "--listen", "127.0.0.1:0"],
                                   environment: ["FANOUTD_HISTORY_DIR": scratch.history])
        #expect(result.status == 73)
        #expect(result.stderr.contains("another fanoutd holds the lock \(scratch.history)/lock"), "\(result.stderr)")
        try stop(first)
    }

    @Test func aClusteredNodeRefusesHistoryDir() throws {
        let scratch = try Scratch()
        let path = scratch.root.appendingPathComponent("cluster.yaml").path
        try "cluster:\n  redis: [\"redis://127.0.0.1:1\"]\nhistory_dir: \(scratch.history)\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", path, "--check-config"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("history_dir: not with a cluster section"), "\(result.stderr)")
    }
}
