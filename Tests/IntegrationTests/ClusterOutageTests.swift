import FanoutTestSupport
import Foundation
import Testing

/// Shard outages with subscribers that stay connected (PROTOCOL.md, "Several nodes"): every message the
/// engine accepts once the shard is back reaches every subscriber exactly once, and `RESET` comes exactly
/// where a subject's numbering restarted or messages were lost to a subscriber's node.
///
/// Each test runs two nodes with fast heartbeats; on each node one subscriber holds the subjects exactly and
/// one through wildcards; a publisher on node 0 publishes to subjects with and without history on every
/// shard, each PUB waiting for its reply, while shard 0 is paused or restarted. "Back", for a subject, is the
/// first PUB acknowledged with `+OK 2`: both nodes' subscriptions were in effect.
@Suite("Shard outages", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterOutageTests {
    enum Outage: String, CaseIterable, CustomTestStringConvertible {
        case pause, restartEmpty, restartWithAOF
        /// Back from a snapshot older than what was delivered: numberings would go back under the same epochs.
        case restartFromSnapshot
        var testDescription: String { rawValue }
    }

    @Test(arguments: Outage.allCases, [1, 2])
    func subscribersThatStayGetEveryMessageAfterTheShardIsBackAndAResetForWhatTheyLost(outage: Outage, shards: Int) throws {
        let redisArguments = outage == .restartWithAOF ? ["--appendonly", "yes", "--appendfsync", "always"] : []
        let rig = try ClusterRig(shards: shards, nodes: 2, redisArguments: redisArguments,
                                 clusterExtra: "  heartbeat: 0.1\n  down_after: 0.5\n")
        let plain = rig.subjects(prefix: "o", perShard: 1)
        let kept = rig.subjects(prefix: "h.o", perShard: 1)
        let subjects = plain + kept
        var readers: [SubscriberLog] = []
        for node in rig.nodes {
            let exact = try node.client(timeout: 20)
            #expect(try exact.command("SUB " + subjects.joined(separator: " ")) == "+OK \(subjects.count)")
            let wildcard = try node.client(timeout: 20)
            #expect(try wildcard.command("SUB o.* h.o.*") == "+OK 2")
            readers += [SubscriberLog(exact, expectedEnds: subjects.count), SubscriberLog(wildcard, expectedEnds: subjects.count)]
        }
        let publisher = PacedPublisher(try rig.nodes[0].client(timeout: 20), subjects: subjects)
        try eventually(timeout: 10, "messages flow") { publisher.acknowledgedCount > 200 }

        switch outage {
        case .pause:
            rig.shards[0].pause()
            try eventually(timeout: 10, "PUBs to the paused shard fail") { publisher.errorCount > 20 }
            rig.shards[0].resume()
        case .restartEmpty, .restartWithAOF, .restartFromSnapshot:
            if outage == .restartFromSnapshot {
                #expect(try rig.shards[0].cli("SAVE") == "OK")
                let saved = publisher.acknowledgedCount
                try eventually(timeout: 10, "messages published after the snapshot") {
                    publisher.acknowledgedCount > saved + 200
                }
            }
            rig.shards[0].kill()
            try eventually(timeout: 10, "PUBs to the dead shard fail") { publisher.errorCount > 20 }
            try rig.shards[0].start()
        }
        // What was published before this may have been lost with the shard (acknowledged, then killed before
        // Redis wrote it out): the RESETs account for it.
        let mark = publisher.publishedCount
        // Back: every subject acknowledged by both nodes after the outage, then a good run more.
        try eventually(timeout: 20, "both nodes receive every subject again") {
            subjects.allSatisfy { publisher.firstBothNodes(of: $0, after: mark) != nil }
        }
        let target = publisher.acknowledgedCount + 300
        try eventually(timeout: 20, "publishing goes on") { publisher.acknowledgedCount > target }
        publisher.stop()
        let ender = try rig.nodes[0].client()
        for subject in subjects { #expect(try ender.command("PUB \(subject) end").hasPrefix("+OK 2")) }
        for reader in readers { try reader.waitForEnds(timeout: 20) }

        let shard0 = Set(subjects.filter { rig.shard(of: $0) == 0 })
        for (index, reader) in readers.enumerated() {
            for subject in subjects {
                let view = reader.view(of: subject)
                let who = "subscriber \(index) on \(subject)"
                #expect(view.violations.isEmpty, "\(who): seqs out of step with RESET: \(view.violations.prefix(3))")
                #expect(Set(view.payloads).count == view.payloads.count, "\(who): duplicates")
                let acknowledged = publisher.acknowledged(of: subject)
                let received = Set(view.payloads)
                // Everything acknowledged once the shard was back arrived.
                let back = publisher.firstBothNodes(of: subject, after: mark) ?? 0
                let lateMissing = acknowledged.filter { $0.order >= back && !received.contains($0.payload) }
                #expect(lateMissing.isEmpty, "\(who): \(lateMissing.count) acknowledged after recovery not delivered")
                // What was lost before is announced: counted exactly, or unknown with a new numbering.
                let missing = acknowledged.filter { !received.contains($0.payload) }.count
                let numbering = view.resets.contains { $0.missed == nil }
                let counted = view.resets.compactMap(\.missed).reduce(0, +)
                if !numbering { #expect(UInt64(missing) <= counted, "\(who): \(missing) lost, RESETs count \(counted)") }
                let outaged = shard0.contains(subject)
                switch outage {
                case .restartEmpty where outaged, .restartFromSnapshot where outaged:
                    // The shard forgot the subject, or holds an older position of it: one new numbering.
                    #expect(view.resets.filter { $0.missed == nil }.count == 1, "\(who): \(view.resets)")
                case .pause where outaged, .restartWithAOF where outaged:
                    // The numbering goes on; history fills its gap, so only subjects without it may lose any.
                    #expect(!numbering, "\(who): \(view.resets)")
                    if kept.contains(subject) {
                        #expect(view.resets.isEmpty && missing == 0, "\(who): \(missing) lost, \(view.resets)")
                    }
                default:
                    // A shard that stayed up: nothing lost, nothing announced.
                    #expect(view.resets.isEmpty && missing == 0, "\(who): \(missing) lost, \(view.resets)")
                }
            }
        }
        let summary = subjects.map { "\($0): \(publisher.acknowledged(of: $0).count)" }.joined(separator: ", ")
        print("\(outage) with \(shards) shard(s): acknowledged \(summary); errors \(publisher.errorCount); " +
              "resets seen \(readers.map { $0.resetCount })")
    }
}

/// One PUB at a time to each subject in turn, each waiting for its reply, on a thread of its own.
private final class PacedPublisher: @unchecked Sendable {
    struct Acknowledged {
        let payload: String
        /// Its place among all PUBs sent.
        let order: Int
        let receivers: Int
    }

    private let lock = NSLock()
    private var byAcknowledged: [String: [Acknowledged]] = [:]
    private var published = 0
    private var errors = 0
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)

    init(_ client: LineClient, subjects: [String]) {
        Thread.detachNewThread { [self] in
            var number = 0
            while !lock.withLock({ stopping }) {
                number += 1
                let subject = subjects[number % subjects.count]
                let payload = "p\(number)"
                guard let reply = try? client.command("PUB \(subject) \(payload)") else { break }
                lock.withLock {
                    published = number
                    if reply.hasPrefix("+OK "), let receivers = Int(reply.dropFirst(4)) {
                        byAcknowledged[subject, default: []].append(Acknowledged(payload: payload, order: number,
                                                                                 receivers: receivers))
                    } else {
                        errors += 1
                    }
                }
                // About two thousand PUBs a second: enough to hit every moment of the outage.
                usleep(reply.hasPrefix("+OK") ? 300 : 2_000)
            }
            finished.signal()
        }
    }

    func stop() {
        lock.withLock { stopping = true }
        finished.wait()
    }

    var publishedCount: Int { lock.withLock { published } }
    var errorCount: Int { lock.withLock { errors } }
    var acknowledgedCount: Int { lock.withLock { byAcknowledged.values.reduce(0) { $0 + $1.count } } }
    func acknowledged(of subject: String) -> [Acknowledged] { lock.withLock { byAcknowledged[subject] ?? [] } }

    /// The order of the first PUB of `subject` after `mark` that both nodes received.
    func firstBothNodes(of subject: String, after mark: Int) -> Int? {
        lock.withLock { byAcknowledged[subject]?.first { $0.order > mark && $0.receivers == 2 }?.order }
    }
}

/// Everything one subscriber receives, read on a thread of its own until an `end` message per subject came.
private final class SubscriberLog: @unchecked Sendable {
    struct Reset: CustomStringConvertible {
        let seq: UInt64
        let missed: UInt64?
        var description: String { "RESET seq=\(seq) missed=\(missed.map(String.init) ?? "unknown")" }
    }

    struct View {
        var payloads: [String] = []
        var resets: [Reset] = []
        /// Lines whose seq is not the one after the previous line's (message or RESET).
        var violations: [String] = []
        var last: UInt64?
    }

    private let lock = NSLock()
    private var views: [String: View] = [:]
    private var ends = 0
    private var failure: Error?
    private let done = DispatchSemaphore(value: 0)

    var resetCount: Int { lock.withLock { views.values.reduce(0) { $0 + $1.resets.count } } }

    init(_ client: LineClient, expectedEnds: Int) {
        Thread.detachNewThread { [self] in
            do {
                while lock.withLock({ ends }) < expectedEnds {
                    take(try client.readLine())
                }
            } catch {
                lock.withLock { failure = error }
            }
            done.signal()
        }
    }

    private func take(_ line: String) {
        let fields = line.split(separator: " ")
        lock.withLock {
            if fields.first == "RESET", fields.count == 5 {
                let subject = String(fields[1])
                let seq = UInt64(fields[3].dropFirst(4)) ?? 0
                let missedText = fields[4].dropFirst(7)
                let reset = Reset(seq: seq, missed: UInt64(missedText))
                var view = views[subject] ?? View()
                if let missed = reset.missed, let last = view.last, last + missed != seq {
                    view.violations.append(line + " after seq \(last)")
                }
                view.resets.append(reset)
                view.last = seq
                views[subject] = view
            } else if let message = ReceivedMessage(line) {
                var view = views[message.subject] ?? View()
                if let last = view.last, message.seq != last + 1 { view.violations.append(line + " after seq \(last)") }
                view.last = message.seq
                if message.payload == "end" { ends += 1 } else { view.payloads.append(message.payload) }
                views[message.subject] = view
            } else {
                views["?", default: View()].violations.append(line)
            }
        }
    }

    func waitForEnds(timeout: TimeInterval) throws {
        guard done.wait(timeout: .now() + timeout) == .success else {
            throw TestFailure("no end message on every subject within \(timeout) s")
        }
        if let failure = lock.withLock({ failure }) { throw failure }
    }

    func view(of subject: String) -> View { lock.withLock { views[subject] ?? View() } }
}
