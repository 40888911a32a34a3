import Foundation
import Testing

/// `backpressure_bytes`: a subscriber that falls behind pauses its publishers instead of being dropped.
@Suite("Publisher backpressure", .threadPerTest, .timeLimit(.minutes(2)))
struct BackpressureTests {
    @Test func aLaggingSubscriberPausesThePublisherAndLosesNothing() throws {
        let daemon = try Daemon(environment: [
            "FANOUTD_BACKPRESSURE_BYTES": String(256 << 10),
            "FANOUTD_MAX_PENDING_BYTES": String(64 << 20),
            "FANOUTD_WRITE_TIMEOUT": "60",
        ])
        let lagging = try LineClient(port: daemon.port, timeout: 30, receiveBuffer: 4096)
        #expect(try lagging.readLine().hasPrefix("+HELLO "))
        #expect(try lagging.command("SUB feed") == "+OK 1")
        let observer = try daemon.client()
        let publisher = try daemon.client(timeout: 60)
        let baseline = try daemon.residentBytes()

        // 40 MB of publishes, sent from a thread of its own: the sends block once the server stops reading.
        let total = 40_000
        let payload = String(repeating: "p", count: 1000)
        let sent = ThreadResult()
        Thread.detachNewThread {
            var count = 0
            do {
                for batch in 0..<(total / 1000) {
                    try publisher.send((0..<1000).map { "PUB feed \(batch * 1000 + $0) \(payload)\n" }.joined())
                    count += 1000
                }
            } catch {}
            sent.set(count)
        }

        try eventually(timeout: 20, "the publisher is held back") {
            infoFields(try observer.command("INFO"))["backpressure_pauses"] != "0"
        }
        let held = infoFields(try observer.command("INFO"))
        #expect(held["slow_consumers"] == "0", "nobody was dropped")
        #expect(held["clients"] == "3")
        #expect(Int(held["published"] ?? "") ?? total < total, "publishing paused part-way: \(held["published"] ?? "?")")
        let growth = try daemon.residentBytes() - baseline
        #expect(growth < 16 << 20, "the backlog stayed near backpressure_bytes: RSS grew \(growth >> 20) MiB")

        // The subscriber catches up: every message arrives, in order, and the publisher is let go.
        lagging.setOption(SOL_SOCKET, SO_RCVBUF, 1 << 20)
        for expected in 0..<total {
            let message = try readMessage(lagging)
            guard message.seq == UInt64(expected + 1), message.payload.hasPrefix("\(expected) ") else {
                Issue.record("message \(expected) arrived as seq \(message.seq) payload \(message.payload.prefix(12))")
                return
            }
        }
        #expect(sent.wait(timeout: 60) == total, "every publish was sent")
        for _ in 0..<total { #expect(try publisher.readLine() == "+OK 1") }
        let after = infoFields(try observer.command("INFO"))
        #expect(after["published"] == String(total))
        #expect(after["slow_consumers"] == "0")
    }

    @Test func backpressureMustStayBelowTheDropLimit() throws {
        let daemon = try Daemon(
            environment: ["FANOUTD_BACKPRESSURE_BYTES": "1048576", "FANOUTD_MAX_PENDING_BYTES": "1048576"],
            waitForListening: false)
        #expect(daemon.waitForExit(timeout: 20) != 0)
        #expect(try daemon.stderr.waitForLine(containing: "backpressure_bytes:", timeout: 5).contains("less than max_pending_bytes"))
    }
}
