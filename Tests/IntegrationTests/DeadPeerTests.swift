import Foundation
import Testing

/// Publishes on `publisher` until the reply count reaches `expected` (the server may still be processing a
/// departure), then returns the count.
private func receiversOf(_ subject: String, _ publisher: LineClient) throws -> Int {
    let reply = try publisher.command("PUB \(subject) probe")
    guard reply.hasPrefix("+OK "), let count = Int(reply.dropFirst(4)) else { throw TestFailure(reply) }
    return count
}

@Suite("Dead peers vanish", .threadPerTest, .timeLimit(.minutes(2)))
struct DeadPeerTests {
    @Test func closedSubscriberLeavesEverySet() throws {
        let daemon = try Daemon()
        let publisher = try daemon.client()
        let staying = try daemon.client()
        #expect(try staying.command("SUB room") == "+OK 1")
        let leaving = try daemon.client()
        #expect(try leaving.command("SUB room only.mine wild.*") == "+OK 3")
        #expect(try receiversOf("room", publisher) == 2)
        leaving.close()
        try eventually("the closed subscriber is gone") { try receiversOf("room", publisher) == 1 }
        #expect(try receiversOf("only.mine", publisher) == 0)
        #expect(try receiversOf("wild.card", publisher) == 0)
        #expect(try publisher.command("CHANNELS") == "+OK 1 room=1", "emptied subjects leave CHANNELS")
        let info = infoFields(try publisher.command("INFO"))
        #expect(info["clients"] == "2")
        #expect(info["subscriptions"] == "1")
        #expect(info["connection_objects"] == "2", "the dropped connection deinitialised: no set kept it alive")
    }

    @Test func resetSubscriberLeavesEverySet() throws {
        let daemon = try Daemon()
        let publisher = try daemon.client()
        let victim = try daemon.client()
        #expect(try victim.command("SUB room") == "+OK 1")
        victim.reset()
        try eventually("the reset subscriber is gone") { try receiversOf("room", publisher) == 0 }
        #expect(try publisher.command("CHANNELS") == "+OK 0")
        #expect(infoFields(try publisher.command("INFO"))["connection_objects"] == "1")
    }

    @Test func killedNetcatSubscriberLeavesEverySet() throws {
        let daemon = try Daemon()
        let netcat = try Netcat(port: daemon.port)
        try netcat.send("SUB room\n")
        _ = try netcat.output.waitForLine(containing: "+OK 1", timeout: 10)
        let publisher = try daemon.client()
        #expect(try receiversOf("room", publisher) == 1)
        netcat.kill()
        try eventually("the killed subscriber is gone") { try receiversOf("room", publisher) == 0 }
        #expect(try publisher.command("CHANNELS") == "+OK 0")
    }

    @Test func subscriberThatNeverReadsIsDroppedWhileAHealthyOneGetsEverything() throws {
        let limit = 1 << 20
        let daemon = try Daemon(environment: ["FANOUTD_MAX_PENDING_BYTES": String(limit)])
        let stalled = try LineClient(port: daemon.port, receiveBuffer: 4096)
        try stalled.sendLine("SUB flood")
        let healthy = try daemon.client()
        #expect(try healthy.command("SUB flood") == "+OK 1")
        let publisher = try daemon.client()
        let baseline = try daemon.residentBytes()

        // 40 MB through the server: far more than the stalled peer's socket buffers and the pending limit.
        // The publisher stays within 500 messages of the healthy reader, which is what keeping up means.
        let payload = String(repeating: "p", count: 1000)
        let total = 40_000
        let progress = ProgressCounter()
        let reader = Thread.detachNewThreadWithResult {
            var next = 1
            while next <= total {
                guard case let message? = try? readMessage(healthy) else { return next }
                if message.seq != UInt64(next) { return -next }
                progress.advance(to: next)
                next += 1
            }
            return next
        }
        var peakResident = baseline
        for start in stride(from: 0, to: total, by: 500) {
            guard progress.wait(atLeast: start - 500, timeout: 30) else {
                Issue.record("the healthy reader stalled at \(progress.value)")
                break
            }
            try publisher.send(String(repeating: "PUB flood \(payload)\n", count: 500))
            for _ in 0..<500 { _ = try publisher.readLine() }
            if start % 5000 == 0 { peakResident = max(peakResident, try daemon.residentBytes()) }
        }
        #expect(reader.wait(timeout: 60) == total + 1, "the healthy subscriber got every message in order")
        let info = infoFields(try publisher.command("INFO"))
        #expect(info["slow_consumers"] == "1")
        #expect(info["clients"] == "2", "the stalled subscriber was dropped")
        #expect(info["connection_objects"] == "2", "and deinitialised")
        let growth = peakResident - baseline
        #expect(growth < 48 << 20, "server memory stayed bounded: grew \(growth >> 20) MiB")
        // What reached the stalled peer is whole lines, possibly ending in the slow-consumer notice.
        stalled.setOption(SOL_SOCKET, SO_RCVBUF, 1 << 20)
        let lines = try stalled.readUntilClosed()
        #expect(lines.first?.hasPrefix("+HELLO fanout/1 ") == true)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("MSG flood ") || $0 == "+OK 1" || $0.hasPrefix("-ERR slow-consumer ") })
        // It was dropped in the middle of a publish run (a batch is 500 KB, a run flushes every 64 KiB): the
        // run's later flushes skip it, so the notice, if it got through, is the last line.
        if let notice = lines.firstIndex(where: { $0.hasPrefix("-ERR slow-consumer ") }) {
            #expect(notice == lines.count - 1, "nothing was written after the slow-consumer notice")
        }
    }

    @Test func aStalledSubscriberHoldsNoMoreThanTheSendBufferInTheKernel() throws {
        let pendingLimit = 128 << 10, sendBuffer = 64 << 10
        let daemon = try Daemon(environment: [
            "FANOUTD_MAX_PENDING_BYTES": String(pendingLimit), "FANOUTD_SEND_BUFFER_BYTES": String(sendBuffer),
        ])
        let stalled = try LineClient(port: daemon.port, receiveBuffer: 4096)
        try stalled.sendLine("SUB slow")
        let publisher = try daemon.client()
        try eventually("the stalled peer is subscribed") { try publisher.command("PUB slow warmup") == "+OK 1" }
        // Left to autotuning, the kernel would take megabytes before the server saw any backlog. Capped, the
        // drop comes after the pending limit, twice the cap (Linux doubles SO_SNDBUF), the peer's small
        // receive buffer and the batch in flight.
        let line = "PUB slow \(String(repeating: "s", count: 1000))\n"
        var published = 0
        while infoFields(try publisher.command("INFO"))["slow_consumers"] == "0" {
            try #require(published < 4 << 20, "no slow-consumer drop after \(published) bytes")
            try publisher.send(String(repeating: line, count: 20))
            for _ in 0..<20 { _ = try publisher.readLine() }
            published += 20 * line.utf8.count
        }
        #expect(published < pendingLimit + 2 * sendBuffer + 256 << 10, "dropped after \(published) bytes")
    }

    @Test func stalledOutputIsDroppedAfterTheWriteTimeout() throws {
        let daemon = try Daemon(environment: ["FANOUTD_WRITE_TIMEOUT": "1", "FANOUTD_MAX_PENDING_BYTES": String(64 << 20)])
        let stalled = try LineClient(port: daemon.port, receiveBuffer: 4096)
        try stalled.sendLine("SUB slow")
        let publisher = try daemon.client()
        try eventually("the stalled peer is subscribed") { try publisher.command("PUB slow warmup") == "+OK 1" }
        // Enough to fill the kernel buffers so that the server's output stops draining.
        let payload = String(repeating: "q", count: 1000)
        for _ in 0..<10 {
            try publisher.send(String(repeating: "PUB slow \(payload)\n", count: 1000))
            for _ in 0..<1000 { _ = try publisher.readLine() }
        }
        try eventually(timeout: 15, "the write timeout fires") {
            infoFields(try publisher.command("INFO"))["slow_consumers"] == "1"
        }
        #expect(try publisher.command("PUB slow after") == "+OK 0")
    }

    @Test func idleConnectionsAreClosedWhenConfigured() throws {
        let daemon = try Daemon(environment: ["FANOUTD_IDLE_TIMEOUT": "0.5"])
        let client = try daemon.client()
        let started = Date()
        let lines = try client.readUntilClosed()
        #expect(lines.count == 1 && lines[0].hasPrefix("-ERR idle-timeout "))
        #expect(Date().timeIntervalSince(started) >= 0.4)
    }
}

extension Thread {
    /// Runs `body` on a new thread; `wait` returns its result.
    static func detachNewThreadWithResult(_ body: @escaping @Sendable () -> Int) -> ThreadResult {
        let result = ThreadResult()
        Thread.detachNewThread { result.set(body()) }
        return result
    }
}

final class ThreadResult: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Int?

    func set(_ newValue: Int) {
        condition.lock()
        value = newValue
        condition.broadcast()
        condition.unlock()
    }

    /// Whether a value has been set.
    var isSet: Bool {
        condition.lock()
        defer { condition.unlock() }
        return value != nil
    }

    func wait(timeout: TimeInterval) -> Int? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while value == nil {
            if !condition.wait(until: deadline) { break }
        }
        return value
    }
}

/// How far a reader thread has got, for a writer to wait on.
final class ProgressCounter: @unchecked Sendable {
    private let condition = NSCondition()
    private var current = 0

    var value: Int {
        condition.lock()
        defer { condition.unlock() }
        return current
    }

    func advance(to newValue: Int) {
        condition.lock()
        current = newValue
        condition.broadcast()
        condition.unlock()
    }

    func wait(atLeast target: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while current < target {
            if !condition.wait(until: deadline) { return current >= target }
        }
        return true
    }
}
