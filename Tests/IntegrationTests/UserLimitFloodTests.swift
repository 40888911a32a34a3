import Foundation
import Testing

/// One user's thousand connections and publish flood against another user's PINGs: the flood is held to the
/// user's rate, every publish over it is answered `-ERR limit`, and the other user is served at once.
@Suite("Per-user limits under a flood", .threadPerTest, .timeLimit(.minutes(3)))
struct UserLimitFloodTests {
    static let users = 1000
    static let rate = 100
    static let refused = "-ERR limit publish rate for user sensors over user_publish_rate 100/s"

    /// What the flooding thread saw, read by the test's thread after it stopped.
    final class Flood: @unchecked Sendable {
        private let lock = NSLock()
        private var stopped = false
        private(set) var accepted = 0
        private(set) var refusals = 0
        private(set) var unexpected: [String] = []
        private(set) var failure: String?
        let done = DispatchSemaphore(value: 0)

        var shouldStop: Bool { lock.withLock { stopped } }
        var answered: Int { lock.withLock { accepted + refusals } }
        func stop() { lock.withLock { stopped = true } }
        func count(_ reply: String) {
            lock.withLock {
                if reply == "+OK 0" { accepted += 1 } else if reply == UserLimitFloodTests.refused { refusals += 1 }
                else if unexpected.count < 10 { unexpected.append(reply) }
            }
        }
        func fail(_ text: String) { lock.withLock { failure = text } }
    }

    @Test func aThousandConnectionsAndAFloodOfOneUserLeaveAnotherUsersPingsFast() throws {
        try raiseOpenFileLimit(to: Self.users + 500)
        let daemon = try Daemon(arguments: ["--config", try fixture("auth.yaml")], environment: [
            "FANOUTD_MAX_CONNECTIONS_PER_USER": String(Self.users), "FANOUTD_USER_PUBLISH_RATE": String(Self.rate),
            "FANOUTD_AUTH_TIMEOUT": "60",
        ])
        let reader = try LineClient(port: daemon.port)
        _ = try reader.readLine()
        #expect(try reader.command("AUTH reader-secret-token") == "+OK")
        // In batches of 100, AUTH pipelined over the batch: max_unauthenticated is 1000.
        var flooders: [LineClient] = []
        for _ in 0..<(Self.users / 100) {
            let batch = try (0..<100).map { _ in try LineClient(port: daemon.port) }
            for client in batch {
                _ = try client.readLine()
                try client.sendLine("AUTH sensor-secret-token")
            }
            for client in batch { #expect(try client.readLine() == "+OK") }
            flooders += batch
        }
        let over = try LineClient(port: daemon.port)
        _ = try over.readLine()
        #expect(try over.command("AUTH sensor-secret-token")
            == "-ERR limit too many connections for user sensors (max_connections_per_user \(Self.users))")
        #expect(try over.readLineOrEOF() == nil, "closed after the refusal")

        let flood = Flood()
        let clients = flooders
        let started = ContinuousClock.now
        Thread.detachNewThread {
            defer { flood.done.signal() }
            let batch = String(repeating: "PUB sensors.flood x\n", count: 20)
            var index = 0
            // Bounded by the test's stop, or 60 s.
            while !flood.shouldStop && ContinuousClock.now - started < .seconds(60) {
                let client = clients[index % clients.count]
                index += 1
                do {
                    try client.send(batch)
                    for _ in 0..<20 { flood.count(try client.readLine()) }
                } catch {
                    flood.fail("\(error)")
                    return
                }
            }
        }
        // PINGs once the flood is under way, while it goes on.
        let deadline = ContinuousClock.now + .seconds(30)
        while flood.answered < 2000 && ContinuousClock.now < deadline { usleep(1000) }
        let answeredBeforePings = flood.answered
        // Paced 5 ms apart (pacing, not waiting for anything), so that the PINGs span a second of the flood and
        // the bucket's refill is in what is counted.
        var pings: [Duration] = []
        for n in 0..<200 {
            let sent = ContinuousClock.now
            #expect(try reader.command("PING \(n)") == "+PONG \(n)")
            pings.append(ContinuousClock.now - sent)
            usleep(5000)
        }
        let answeredDuringPings = flood.answered
        flood.stop()
        #expect(flood.done.wait(timeout: .now() + 30) == .success, "the flood stopped")
        let elapsed = ContinuousClock.now - started
        #expect(flood.failure == nil, "\(flood.failure ?? "")")
        #expect(flood.unexpected.isEmpty, "every publish answered +OK or the limit line: \(flood.unexpected)")
        #expect(answeredBeforePings >= 2000 && answeredDuringPings > answeredBeforePings,
                "the flood ran while the PINGs were timed: \(answeredBeforePings) then \(answeredDuringPings)")
        let p99 = pings.sorted()[197]
        #expect(p99 <= .milliseconds(50), "the other user's PING p99 was \(p99) during the flood")
        // At most the burst plus the rate over the flood's time (a second more for the clocks' difference).
        let seconds = Double(elapsed.components.seconds) + 1
        #expect(flood.accepted <= Self.rate + Int(Double(Self.rate) * seconds), "\(flood.accepted) in \(elapsed)")
        #expect(flood.refusals > flood.accepted, "\(flood.refusals) refused, \(flood.accepted) accepted")
        #expect(flood.accepted > Self.rate, "the bucket refilled at the rate after its burst: \(flood.accepted)")
        let info = infoFields(try reader.command("INFO"))
        #expect(info["user_publish_refusals"] == String(flood.refusals))
        #expect(info["published"] == String(flood.accepted))
        #expect(info["user_connection_refusals"] == "1")
    }
}

/// Raises this process's soft open-files limit to at least `wanted`, within the hard limit.
private func raiseOpenFileLimit(to wanted: Int) throws {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw TestFailure("getrlimit: errno \(errno)") }
    guard limit.rlim_cur < rlim_t(wanted) else { return }
    guard limit.rlim_max >= rlim_t(wanted) else {
        throw TestFailure("the hard open-files limit \(limit.rlim_max) is below the \(wanted) this test needs")
    }
    limit.rlim_cur = rlim_t(wanted)
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw TestFailure("setrlimit: errno \(errno)") }
}
