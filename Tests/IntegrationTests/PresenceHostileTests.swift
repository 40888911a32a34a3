import FanoutProtocol
import Foundation
import Testing

/// Presence (1.3) under a crowd: 10,000 members closing at once, one client joining and leaving 100,000 times,
/// and a shutdown with 10,000 members. Each event is published once, numbered without gaps, and the loop keeps
/// answering another client's PINGs meanwhile. Alone: the PING times and the RSS are what the daemon gets of
/// the machine, which other tests' daemons would share.
@Suite("Presence under a crowd", .threadPerTestAlone, .timeLimit(.minutes(3)))
struct PresenceHostileTests {
    static let crowd = 10_000
    /// The crowd, a watcher, a bystander and a spare: over the default max_connections (10,000).
    static let environment = ["FANOUTD_PRESENCE": "crowd.>", "FANOUTD_MAX_CONNECTIONS": "10100"]

    /// 10,000 members of one subject close their sockets in one go: the watcher gets exactly 10,000 leaves
    /// with reason=closed, one per member, numbered 10,001 to 20,000 after the joins, published a slice per
    /// loop pass, while a bystander PINGs. The loop time a PING waits (the loop thread's CPU time
    /// meanwhile: the wait on a machine of its own) and its wall-clock wait should have a p99 within 50 ms; the
    /// pass that takes the closes breaks that (see below), so that bound is a known issue and the test holds
    /// the longest wait to a second.
    @Test func tenThousandMembersClosingAtOnceLeaveOnceEachWhileABystanderIsServed() throws {
        let daemon = try Daemon(environment: Self.environment)
        let watcher = try daemon.client(timeout: 30)
        #expect(try watcher.command("SUB $presence.crowd.room") == "+OK 1")
        let members = try PresenceCrowd.members(Self.crowd, of: "crowd.room", port: daemon.port)
        let joins = try PresenceRig.read(Self.crowd, from: watcher).map(PresenceCrowd.event)
        let joined = joins.compactMap { $0?.event.member.client }
        #expect(joins.enumerated().allSatisfy {
            $0.element?.seq == UInt64($0.offset + 1) && $0.element?.event.kind == .join
        })
        #expect(Set(joined).count == Self.crowd, "one join per member")

        let bystander = try PingingBystander(daemon: daemon)
        try bystander.start()
        let closing = ContinuousClock.now
        for member in members { member.close() }
        let leaves = try PresenceRig.read(Self.crowd, from: watcher).map(PresenceCrowd.event)
        let departure = ContinuousClock.now - closing
        let pings = try bystander.stop()

        #expect(leaves.enumerated().allSatisfy { $0.element?.seq == UInt64(Self.crowd + $0.offset + 1) },
                "the leaves are numbered 10,001 to 20,000 without a gap")
        #expect(leaves.allSatisfy { $0?.event.kind == .leave && $0?.event.reason == "closed" })
        let left = leaves.compactMap { $0?.event.member.client }
        #expect(left.count == Self.crowd && Set(left) == Set(joined), "each member leaves once")
        #expect(try watcher.pushes(beforeFence: "after-the-leaves") == [], "no event more")
        let info = infoFields(try watcher.command("INFO"))
        #expect(info["presence_members"] == "0" && info["presence_events"] == String(2 * Self.crowd))
        #expect(try watcher.command("WHO crowd.room") == "+OK 0")

        #expect(pings.failure == nil, "\(pings)")
        #expect(pings.count >= 20, "the bystander PINGed throughout the \(departure): \(pings)")
        // The 10,000 EOFs are read in three loop passes (libevent takes at most 4,096 ready sockets per poll),
        // and the PING, ready after them, waits for them all: about 3 µs each (a read, an epoll change and the
        // callback). Their departures, 10 µs each (the close itself most of it), wait past
        // `Departures.perPass` and go a slice per pass, so they add a slice, not all of them: 36-48 ms of
        // loop time on a release build (100-160 ms when the departures were made in the pass that read them).
        // The promise is the release build's, and `.ci/run` runs this suite again against the package's
        // binaries; the debug build's Swift part of each EOF is slower (60-80 ms alone, up to 115 ms beside
        // other suites), and it is held to three times the bound. The wall clock also counts the other
        // builds sharing these two cores.
        let bound = Daemon.isReleaseBuild ? 50.0 : 150.0
        #expect(pings.loopP99 <= bound, "the bystander's PING, loop time, over the \(departure): \(pings)")
        #expect(pings.wallP99 <= 250, "the bystander's PING, wall clock, over the \(departure): \(pings)")
        // What no build may exceed: the loop held for a second.
        #expect((pings.loops.max() ?? .infinity) <= 1000, "the bystander's longest PING, loop time: \(pings)")
        print("presence crowd: 10,000 leaves in \(departure); \(pings)")
    }

    /// One client sends SUB and UNSUB of one kept subject 100,000 times each, pipelined: the watcher gets
    /// 200,000 events in order (join, leave, join, ...), each numbered one more than the one before and naming
    /// that client, while the bystander's PINGs are answered at once; WHO then lists no one. Memory: the first
    /// 100,000 take the server's RSS to a working size (the publish queue up to its bound of 65,536 events,
    /// the watcher's output, what the allocator keeps of them), within 32 MiB of the start. A leak grows the RSS
    /// every round, where the allocator's high-water mark moves in one now and then (by up to 2.4 MB beside
    /// the rest of the suite): of two further rounds of 100,000, one at least stays within 2 MiB of the round
    /// before it, which a leak of 10 bytes per join or leave would break in both.
    @Test func aHundredThousandJoinsAndLeavesOfOneClientGoOutInOrderAndLeaveNothingBehind() throws {
        let daemon = try Daemon(environment: Self.environment)
        let watcher = try daemon.client(timeout: 60)
        #expect(try watcher.command("SUB $presence.crowd.churn") == "+OK 1")
        let churner = try daemon.client(timeout: 60)
        let id = String(try PresenceRig.id(of: churner, asking: watcher))
        let start = try daemon.residentBytes()

        let bystander = try PingingBystander(daemon: daemon)
        try bystander.start()
        let started = ContinuousClock.now
        let problems = try Self.churn(100_000, churner, watcher: watcher, id: id, after: 0)
        let elapsed = ContinuousClock.now - started
        let pings = try bystander.stop()
        #expect(problems.isEmpty, "\(problems)")
        #expect(try watcher.command("WHO crowd.churn") == "+OK 0")
        let working = try daemon.residentBytes()

        let again = try Self.churn(100_000, churner, watcher: watcher, id: id, after: 200_000)
        #expect(again.isEmpty, "\(again)")
        let middle = try daemon.residentBytes()
        let third = try Self.churn(100_000, churner, watcher: watcher, id: id, after: 400_000)
        #expect(third.isEmpty, "\(third)")
        #expect(try watcher.command("WHO crowd.churn") == "+OK 0")
        let info = infoFields(try watcher.command("INFO"))
        #expect(info["presence_members"] == "0" && info["presence_subjects"] == "0")
        #expect(info["presence_events"] == "600000")
        let end = try daemon.residentBytes()
        let memory = "RSS \(start >> 10) KiB at the start, \(working >> 10) KiB after 100,000, "
            + "\(middle >> 10) KiB after 200,000, \(end >> 10) KiB after 300,000"
        #expect(working - start <= 32 << 20, "\(memory)")
        #expect(min(middle - working, end - middle) <= 2 << 20, "\(memory)")

        #expect(pings.failure == nil, "\(pings)")
        #expect(pings.count >= 20, "the bystander PINGed throughout the \(elapsed): \(pings)")
        #expect(pings.loopP99 <= 50, "the bystander's PING, loop time, over the \(elapsed): \(pings)")
        #expect(pings.wallP99 <= 250, "the bystander's PING, wall clock, over the \(elapsed): \(pings)")
        print("presence churn: \(memory); \(pings) over \(elapsed)")
    }

    /// SIGTERM with 10,000 members: the server stops within its shutdown grace (5 s: the members' sockets take
    /// their farewells at once, so the grace is never waited out), and the 10,000 leaves with reason=shutdown,
    /// published as the server stops, are in history on disk after a restart, after the 10,000 joins, in the
    /// order the server closed the members (by id).
    @Test func aShutdownWithTenThousandMembersStopsInItsGraceAndKeepsTheirLeaves() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crowd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        try """
        presence: ["crowd.>"]
        history:
          - subjects: "$presence.>"
            max_messages: 20000

        """.write(to: config, atomically: true, encoding: .utf8)
        let environment = Self.environment.merging([
            "FANOUTD_HISTORY_DIR": directory.appendingPathComponent("history").path,
            "FANOUTD_SHUTDOWN_GRACE": "5",
        ]) { $1 }
        let daemon = try Daemon(arguments: ["--config", config.path], environment: environment)
        let members = try PresenceCrowd.members(Self.crowd, of: "crowd.down", port: daemon.port)
        let asker = try daemon.client()
        #expect(try asker.command("WHO crowd.down 0") == "+OK \(Self.crowd)")
        let ids = try members.prefix(3).map { try PresenceRig.id(of: $0, asking: asker) }

        let signalled = ContinuousClock.now
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 30) == 0)
        let stopping = ContinuousClock.now - signalled
        #expect(stopping < .seconds(5), "stopped \(stopping) after SIGTERM, shutdown_grace 5 s")
        print("presence shutdown: 10,000 members, stopped \(stopping) after SIGTERM")
        withExtendedLifetime(members) {}

        let restarted = try Daemon(arguments: ["--config", config.path], environment: environment)
        let reader = try restarted.client(timeout: 60)
        let reply = try reader.command("LAST $presence.crowd.down \(2 * Self.crowd)")
        #expect(reply.hasPrefix("+OK 1 ") && reply.contains(" replayed=\(2 * Self.crowd) "), "\(reply)")
        let events = try PresenceRig.read(2 * Self.crowd, from: reader).map(PresenceCrowd.event)
        #expect(events.enumerated().allSatisfy { $0.element?.seq == UInt64($0.offset + 1) })
        let joins = events.prefix(Self.crowd).compactMap { $0?.event.kind == .join ? $0?.event.member.client : nil }
        let leaves = events.suffix(Self.crowd).compactMap {
            $0?.event.kind == .leave && $0?.event.reason == "shutdown" ? $0?.event.member.client : nil
        }
        #expect(joins.count == Self.crowd && leaves.count == Self.crowd, "\(joins.count) joins, \(leaves.count) leaves")
        #expect(Set(leaves) == Set(joins), "each member leaves once")
        let numbers = leaves.compactMap { UInt64($0) }
        #expect(numbers == numbers.sorted(), "the leaves in the order the server closed the members, by id")
        #expect(ids.allSatisfy { leaves.contains(String($0)) })
    }

    /// Sends `rounds` SUB/UNSUB pairs of crowd.churn on `churner` from a thread of its own while this thread
    /// reads the watcher's 2 x `rounds` events and a third reads the churner's replies; returns what was not
    /// as it should be (at most the first ten), empty when every event and reply was.
    static func churn(_ rounds: Int, _ churner: LineClient, watcher: LineClient, id: String,
                      after seq: UInt64) throws -> [String] {
        let problems = Problems()
        let chunk = String(repeating: "SUB crowd.churn\nUNSUB crowd.churn\n", count: 1000)
        Thread.detachNewThread {
            defer { problems.sent.signal() }
            do {
                for _ in 0..<(rounds / 1000) { try churner.send(chunk) }
            } catch { problems.note("sending: \(error)") }
        }
        Thread.detachNewThread {
            defer { problems.replied.signal() }
            do {
                for n in 0..<(2 * rounds) {
                    let reply = try churner.readLine()
                    if reply != (n % 2 == 0 ? "+OK 1" : "+OK 0") { problems.note("reply \(n): \(reply)") }
                }
            } catch { problems.note("replies: \(error)") }
        }
        for n in 0..<(2 * rounds) {
            let line = try watcher.readLine()
            guard let (number, event) = PresenceCrowd.event(line), number == seq + UInt64(n) + 1,
                  event.kind == (n % 2 == 0 ? .join : .leave), event.member.client == id,
                  event.reason == (n % 2 == 0 ? nil : "unsub") else {
                problems.note("event \(n): \(line)")
                continue
            }
        }
        if problems.sent.wait(timeout: .now() + 30) != .success { problems.note("the sender did not finish") }
        if problems.replied.wait(timeout: .now() + 30) != .success { problems.note("the replies did not come") }
        return problems.list
    }

    /// What the churn's threads found wrong, at most ten.
    final class Problems: @unchecked Sendable {
        private let lock = NSLock()
        private var found: [String] = []
        let sent = DispatchSemaphore(value: 0)
        let replied = DispatchSemaphore(value: 0)

        var list: [String] { lock.withLock { found } }
        func note(_ problem: String) { lock.withLock { if found.count < 10 { found.append(problem) } } }
    }
}
