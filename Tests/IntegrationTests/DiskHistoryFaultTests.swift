import Foundation
import Testing

/// History on disk when the disk fails: writes that fail (a real tmpfs that fills, or the fault seam,
/// `FANOUTD_HISTORY_FAULTS`), a reload that drops a rule, damage found after a crash, a full disk at start.
/// The promise each test holds: a (subject, epoch, seq) is never given to two different messages, and under
/// `always` a `+OK` means the message is on disk.
@Suite("History on disk under failures", .threadPerTest, .timeLimit(.minutes(3)), .serialized)
struct DiskHistoryFaultTests {
    static let mountReason = "needs root and mount -t tmpfs for a disk that really fills"

    private final class Scratch {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-fault-\(UUID().uuidString)")
        var history: String { root.appendingPathComponent("history").path }
        var config: String { root.appendingPathComponent("fanoutd.yaml").path }
        var disk: SmallDisk?

        init(rules: Bool = true) throws {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            try writeConfig(rules: rules)
        }

        deinit {
            disk = nil
            try? FileManager.default.removeItem(at: root)
        }

        /// `f.>` and `h.>` keep everything; `h.>` only while `hRule`.
        func writeConfig(rules: Bool = true, hRule: Bool = true, extra: String = "") throws {
            var text = "history:\n  - subjects: \"f.>\"\n    max_messages: 100000\n"
            if hRule { text += "  - subjects: \"h.>\"\n    max_messages: 100000\n" }
            if !rules { text = "" }
            text += "history_max_bytes: 268435456\n" + extra
            try text.write(toFile: config, atomically: true, encoding: .utf8)
        }

        /// A tmpfs of `megabytes` for the history directory.
        func mountHistory(megabytes: Int) throws -> SmallDisk {
            let disk = try #require(SmallDisk(megabytes: megabytes, at: history))
            self.disk = disk
            return disk
        }
    }

    /// What a subscriber was given under one epoch: seq to payload.
    private struct Given {
        var epoch = ""
        var payloads: [UInt64: String] = [:]

        mutating func take(_ lines: [String], subject: String) {
            for line in lines where line.hasPrefix("MSG \(subject) ") {
                let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
                guard parts.count >= 3, let seq = UInt64(parts[2]) else { continue }
                let payload = parts.count == 4 ? parts[3] : ""
                #expect(payloads[seq] == nil || payloads[seq] == payload, "seq \(seq) given twice in one run")
                payloads[seq] = payload
            }
        }
    }

    private func start(_ scratch: Scratch, fsync: String, faults: String? = nil) throws -> Daemon {
        var environment = ["FANOUTD_HISTORY_DIR": scratch.history, "FANOUTD_HISTORY_FSYNC": fsync]
        if let faults { environment["FANOUTD_HISTORY_FAULTS"] = faults }
        return try Daemon(arguments: ["--config", scratch.config], environment: environment)
    }

    private func connect(_ daemon: Daemon) throws -> LineClient {
        let client = try LineClient(port: daemon.port, timeout: 20)
        _ = try client.readLine()
        return client
    }

    /// A subscriber that learns the subject's epoch.
    private func subscribe(_ daemon: Daemon, _ subject: String) throws -> (LineClient, Given) {
        let client = try connect(daemon)
        let reply = try client.command("RESUME \(subject)")
        var given = Given()
        given.epoch = try #require(infoFields(reply)["epoch"])
        return (client, given)
    }

    private func kill9(_ daemon: Daemon) {
        daemon.signal(SIGKILL)
        _ = daemon.waitForExit(timeout: 20)
    }

    /// After a restart: every seq the old run gave under `given.epoch` is either under another epoch now (the
    /// reply says `missed=unknown`) or still names the same payload, and the next PUB's seq was never given.
    /// Returns the payloads replayed (under whichever epoch).
    @discardableResult
    private func expectNoSeqGivenTwice(_ daemon: Daemon, _ subject: String, _ given: Given) throws -> [String] {
        let client = try connect(daemon)
        let reply = try client.command("RESUME \(subject) \(given.epoch) 0")
        let fields = infoFields(reply)
        let epoch = try #require(fields["epoch"])
        let replayed = try #require(Int(fields["replayed"] ?? ""), "\(reply)")
        var now = Given()
        now.epoch = epoch
        let lines = try (0..<replayed).map { _ in try client.readLine() }
        now.take(lines, subject: subject)
        let publisher = try connect(daemon)
        #expect(try publisher.command("PUB \(subject) probe-after-restart").hasPrefix("+OK "))
        let next = try client.readLine()
        now.take([next], subject: subject)
        if epoch == given.epoch {
            for (seq, payload) in now.payloads {
                if let before = given.payloads[seq] {
                    #expect(before == payload, "seq \(seq) of \(epoch) was \(before) and is now \(payload): \(reply)")
                }
            }
        } else {
            #expect(fields["missed"] == "unknown", "\(reply)")
        }
        return lines.compactMap { $0.split(separator: " ", maxSplits: 3).dropFirst(3).first.map(String.init) }
    }

    // MARK: 1. A write that fails is not acknowledged

    /// Pipelines 5,000 PUBs of 1 KB at a 3 MiB tmpfs under `always`; returns (acknowledged, lines the
    /// publisher read after them).
    private func pipelineIntoFullDisk(_ daemon: Daemon, count: Int) throws -> (acknowledged: Int, rest: [String]) {
        let publisher = try connect(daemon)
        let pad = String(repeating: "x", count: 1000)
        let text = (0..<count).map { "PUB f.a msg-\($0)-\(pad)\n" }.joined()
        // Sent from another thread: the server may close the connection before it has read everything.
        let sender = Thread.detachNewThreadWithResult { () -> Int in
            (try? publisher.send(text)) == nil ? 1 : 0
        }
        var acknowledged = 0
        var rest: [String] = []
        while acknowledged + rest.count < count, let line = try publisher.readLineOrEOF() {
            if rest.isEmpty && line.hasPrefix("+OK ") { acknowledged += 1 } else { rest.append(line) }
        }
        _ = sender.wait(timeout: 30)
        return (acknowledged, rest)
    }

    private func aWriteThatFailsIsNeverAcknowledged(_ scratch: Scratch, faults: String?,
                                                    room: (() -> Void)?) throws {
        let daemon = try start(scratch, fsync: "always", faults: faults)
        var (subscriber, given) = try subscribe(daemon, "f.a")
        let (acknowledged, rest) = try pipelineIntoFullDisk(daemon, count: 5000)
        #expect(acknowledged < 5000, "every PUB was acknowledged although the disk filled")
        #expect(acknowledged > 0)
        #expect(rest.first?.hasPrefix("-ERR unavailable ") == true, "\(rest.prefix(2))")
        #expect(rest.allSatisfy { $0.hasPrefix("-ERR unavailable ") }, "\(rest.prefix(3))")
        // A subject without history is untouched.
        let other = try connect(daemon)
        #expect(try other.command("PUB plain.x still-here") == "+OK 0")
        given.take(try subscriber.pushes(beforeFence: "end"), subject: "f.a")
        // Every acknowledged message reached the subscriber, in order, as seqs 1...acknowledged.
        for index in 0..<acknowledged {
            #expect(given.payloads[UInt64(index + 1)]?.hasPrefix("msg-\(index)-") == true, "seq \(index + 1)")
        }
        let info = infoFields(try other.command("INFO"))
        #expect(Int(info["history_disk_failures"] ?? "") ?? 0 > 0)
        kill9(daemon)

        room?()
        let second = try start(scratch, fsync: "always")
        let replayed = try expectNoSeqGivenTwice(second, "f.a", given)
        // Every acknowledged message is on disk.
        let recovered = Set(replayed.compactMap { $0.split(separator: "-").dropFirst().first.flatMap { Int($0) } })
        #expect((0..<acknowledged).allSatisfy { recovered.contains($0) },
                "\(acknowledged) acknowledged, \(recovered.count) recovered")
    }

    @Test(.enabled(if: SmallDisk.available, Comment(rawValue: mountReason)))
    func aWriteThatFailsOnAFullTmpfsIsNeverAcknowledged() throws {
        let scratch = try Scratch()
        let disk = try scratch.mountHistory(megabytes: 3)
        try aWriteThatFailsIsNeverAcknowledged(scratch, faults: nil, room: { disk.resize(megabytes: 64) })
    }

    @Test func aWriteThatFailsThroughTheFaultSeamIsNeverAcknowledged() throws {
        let scratch = try Scratch()
        try aWriteThatFailsIsNeverAcknowledged(scratch, faults: "write=ENOSPC@3", room: nil)
    }

    @Test func aSyncThatFailsIsNeverAcknowledged() throws {
        let scratch = try Scratch()
        try aWriteThatFailsIsNeverAcknowledged(scratch, faults: "sync=EIO@10", room: nil)
    }

    // MARK: 2. A reload that drops a rule, then a crash

    @Test func aReloadThatDropsARuleThenACrashNeverNumbersASeqAgain() throws {
        let scratch = try Scratch()
        let daemon = try start(scratch, fsync: "always")
        var (subscriber, given) = try subscribe(daemon, "h.a")
        let publisher = try connect(daemon)
        try publisher.send((0..<100).map { "PUB h.a early-\($0)\n" }.joined())
        for _ in 0..<100 { #expect(try publisher.readLine().hasPrefix("+OK ")) }
        try scratch.writeConfig(hRule: false)
        let reloads = daemon.stderr.all.filter { $0.contains("configuration reloaded") }.count
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", after: reloads, timeout: 20)
        try publisher.send((0..<50).map { "PUB h.a later-\($0)\n" }.joined())
        for _ in 0..<50 { #expect(try publisher.readLine().hasPrefix("+OK ")) }
        given.take(try subscriber.pushes(beforeFence: "end"), subject: "h.a")
        #expect(given.payloads.count == 150)
        kill9(daemon)

        try scratch.writeConfig(hRule: true)
        let second = try start(scratch, fsync: "always")
        try expectNoSeqGivenTwice(second, "h.a", given)
    }

    // MARK: 3. Damage in the last segment after a crash

    @Test(arguments: ["flip", "zero", "length"])
    func damageInTheLastSegmentIsNotATornTail(_ how: String) throws {
        let scratch = try Scratch()
        let daemon = try start(scratch, fsync: "always")
        var (subscriber, given) = try subscribe(daemon, "f.d")
        let publisher = try connect(daemon)
        for batch in 0..<40 {
            try publisher.send((0..<100).map { "PUB f.d m-\(batch * 100 + $0)-0123456789abcdef\n" }.joined())
            for _ in 0..<100 { #expect(try publisher.readLine().hasPrefix("+OK ")) }
        }
        given.take(try subscriber.pushes(beforeFence: "end"), subject: "f.d")
        kill9(daemon)
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.history).filter { $0.hasSuffix(".seg") }
        let segment = scratch.history + "/" + (try #require(names.sorted().last))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
        let middle = bytes.count / 2
        if how == "flip" {
            bytes[middle] ^= 0x40
        } else if how == "length" {
            // A record's length made to run past the file's end: it looks like a torn write, but whole records
            // follow it.
            var offset = 0
            while offset < middle {
                offset += 8 + Int(UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8
                                  | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24)
            }
            let length = UInt32(bytes.count - offset - 8 + 1)
            for shift in 0..<4 { bytes[offset + shift] = UInt8(truncatingIfNeeded: length >> (8 * shift)) }
        } else {
            let block = middle / 4096 * 4096
            for index in block..<min(bytes.count, block + 4096) { bytes[index] = 0 }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: segment))

        let second = try start(scratch, fsync: "always")
        try expectNoSeqGivenTwice(second, "f.d", given)
        #expect(second.stderr.all.contains { $0.contains("damaged record") }, "\(second.stderr.all)")
    }

    // MARK: 4. A disk that filled once

    @Test(.enabled(if: SmallDisk.available, Comment(rawValue: mountReason)))
    func aDiskThatFilledAndEmptiedLosesOnlyWhatItCouldNotWrite() throws {
        let scratch = try Scratch()
        let disk = try scratch.mountHistory(megabytes: 8)
        let daemon = try start(scratch, fsync: "everysec")
        let publisher = try connect(daemon)
        let pad = String(repeating: "y", count: 1000)
        func burst(_ label: String, _ count: Int) throws {
            try publisher.send((0..<count).map { "PUB f.b \(label)-\($0)-\(pad)\n" }.joined())
            for _ in 0..<count { #expect(try publisher.readLine().hasPrefix("+OK ")) }
        }
        func settled() throws -> Bool { infoFields(try publisher.command("INFO"))["history_write_queue"] == "0" }
        try burst("before", 500)
        try eventually("the writer took the first burst") { try settled() }
        let filler = disk.fill()
        try burst("full", 3000)
        try eventually("writes failed") {
            Int(infoFields(try publisher.command("INFO"))["history_disk_failures"] ?? "") ?? 0 > 0
        }
        try FileManager.default.removeItem(atPath: filler)
        try burst("after", 500)
        try eventually("the writer took the last burst") { try settled() }
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)

        let second = try start(scratch, fsync: "everysec")
        #expect(!second.stderr.all.contains { $0.contains("damaged") }, "\(second.stderr.all)")
        #expect(!FileManager.default.fileExists(atPath: scratch.history + "/damaged"))
        let client = try connect(second)
        let reply = try client.command("RESUME f.b")
        let seq = try #require(Int(infoFields(reply)["seq"] ?? ""))
        #expect(seq == 4000, "\(reply)")
        // The records that failed were written again once there was room: nothing is missing, in order.
        let last = try client.command("LAST f.b 4000")
        #expect(last.contains("replayed=4000"), "\(last)")
        let replayed = Int(infoFields(last)["replayed"] ?? "") ?? 0
        let lines = try (0..<replayed).map { _ in try client.readLine() }
        #expect(lines.first?.hasPrefix("MSG f.b 1 before-0-") == true)
        #expect(lines.last?.hasPrefix("MSG f.b 4000 after-499-") == true)
    }

    @Test func aWriteThatFailsForAWhileLeavesTheSegmentWhole() throws {
        let scratch = try Scratch()
        let daemon = try start(scratch, fsync: "always", faults: "write=ENOSPC@3x2")
        var publisher = try connect(daemon)
        var acknowledged: [String] = []
        for round in 0..<8 {
            let lines = (0..<20).map { "PUB f.c r\(round)-\($0)\n" }
            try? publisher.send(lines.joined())
            for index in 0..<20 {
                guard let line = try publisher.readLineOrEOF() else { break }
                if line.hasPrefix("+OK ") { acknowledged.append("r\(round)-\(index)") } else { break }
            }
            // A publisher told of a failure is closed: go on with another, once the writer takes records again.
            if (try? publisher.command("PING")) != "+PONG" {
                try eventually("records are taken again") {
                    let probe = try connect(daemon)
                    return (try? probe.command("PUB f.probe p"))?.hasPrefix("+OK ") == true
                }
                publisher = try connect(daemon)
            }
        }
        #expect(acknowledged.count >= 100, "\(acknowledged.count)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 20) == 0)
        let second = try start(scratch, fsync: "always")
        #expect(!second.stderr.all.contains { $0.contains("damaged") }, "\(second.stderr.all)")
        let client = try connect(second)
        let reply = try client.command("LAST f.c 1000")
        let replayed = try #require(Int(infoFields(reply)["replayed"] ?? ""))
        let replies = try (0..<replayed).map { _ in try client.readLine() }
        let payloads = Set(replies.map { $0.split(separator: " ").last.map(String.init) ?? "" })
        // What was acknowledged after the failure is all there.
        let late = acknowledged.filter { $0.hasPrefix("r7-") }
        #expect(!late.isEmpty && late.allSatisfy { payloads.contains($0) }, "\(reply)")
    }

    // MARK: A write torn anywhere

    /// The seam tears a write at a byte and kills the process there, as a power cut would, in each mode: no
    /// seq the subscriber was given names another message after the restart.
    @Test(arguments: [("always", 150_000), ("always", 400_001), ("everysec", 300_007), ("no", 200_003)])
    func aWriteTornAnywhereNeverNumbersASeqAgain(_ fsync: String, _ byte: Int) throws {
        let scratch = try Scratch()
        let daemon = try start(scratch, fsync: fsync, faults: "tear=\(byte)")
        var (subscriber, given) = try subscribe(daemon, "f.t")
        let publisher = try connect(daemon)
        let pad = String(repeating: "t", count: 200)
        var lines: [String] = []
        publishing: for batch in 0..<200 {
            guard (try? publisher.send((0..<100).map { "PUB f.t t-\(batch * 100 + $0)-\(pad)\n" }.joined())) != nil
            else { break }
            for _ in 0..<100 {
                guard let line = try? publisher.readLineOrEOF() else { break publishing }
                lines.append(line)
            }
        }
        while let line = try? subscriber.readLineOrEOF() { given.take([line], subject: "f.t") }
        #expect(daemon.waitForExit(timeout: 20) != 0, "the tear did not happen")
        #expect(!given.payloads.isEmpty)

        let second = try start(scratch, fsync: fsync)
        try expectNoSeqGivenTwice(second, "f.t", given)
    }

    // MARK: Start-up

    @Test(.enabled(if: SmallDisk.available, Comment(rawValue: mountReason)), arguments: ["always", "everysec"])
    func aFullDiskAtStartLeavesTheServerServing(_ fsync: String) throws {
        let scratch = try Scratch()
        let disk = try scratch.mountHistory(megabytes: 2)
        let first = try start(scratch, fsync: fsync)
        let publisher = try connect(first)
        #expect(try publisher.command("PUB f.s one").hasPrefix("+OK "))
        first.signal(SIGTERM)
        #expect(first.waitForExit(timeout: 20) == 0)
        disk.fill()

        let second = try start(scratch, fsync: fsync)
        let client = try connect(second)
        let reply = try client.command("PUB f.s two")
        if fsync == "always" {
            #expect(reply.hasPrefix("-ERR unavailable "), "\(reply)")
        } else {
            #expect(reply.hasPrefix("+OK "), "\(reply)")
        }
        let plain = try connect(second)
        #expect(try plain.command("PUB plain.s three") == "+OK 0")
        #expect(try plain.command("PING") == "+PONG")
    }

    @Test func anUnreadableSegmentDoesNotStopTheServer() throws {
        let scratch = try Scratch()
        let first = try start(scratch, fsync: "everysec")
        let (_, given) = try subscribe(first, "f.u")
        let publisher = try connect(first)
        for index in 1...3 { #expect(try publisher.command("PUB f.u m\(index)").hasPrefix("+OK ")) }
        first.signal(SIGTERM)
        #expect(first.waitForExit(timeout: 20) == 0)
        // A name that reads as a segment but cannot be read as a file (root reads any file).
        try FileManager.default.createDirectory(atPath: scratch.history + "/00000000000000ff.seg",
                                                withIntermediateDirectories: false)

        let second = try start(scratch, fsync: "everysec")
        #expect(second.stderr.all.contains { $0.contains("cannot be read") }, "\(second.stderr.all)")
        let client = try connect(second)
        let reply = try client.command("RESUME f.u \(given.epoch) 0")
        #expect(reply.contains("missed=unknown") && reply.contains("replayed=3"), "\(reply)")
    }

    @Test func aReloadWarningNamesTheDirectoryInUse() throws {
        let scratch = try Scratch()
        let used = scratch.root.appendingPathComponent("used").path
        try scratch.writeConfig(extra: "history_dir: \(used)\n")
        let daemon = try Daemon(arguments: ["--config", scratch.config])
        for other in ["second", "third"] {
            try scratch.writeConfig(extra: "history_dir: \(scratch.root.appendingPathComponent(other).path)\n")
            let reloads = daemon.stderr.all.filter { $0.contains("configuration reloaded") }.count
            daemon.signal(SIGHUP)
            _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", after: reloads, timeout: 20)
        }
        let warnings = daemon.stderr.all.filter { $0.contains("take effect at the next start") }
        #expect(warnings.count == 2 && warnings.allSatisfy { $0.contains("keeping \(used) with fsync") }, "\(warnings)")
    }
}
