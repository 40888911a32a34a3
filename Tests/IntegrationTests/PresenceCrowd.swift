import FanoutProtocol
import Foundation
import Testing

/// Helpers of the presence hostile tests: a crowd of members, the events a watcher reads, and a bystander that
/// times its PINGs while the crowd comes and goes.
enum PresenceCrowd {
    /// `count` connections, each a member of `subject` (its `SUB` answered), connected and subscribed in
    /// batches of 500 with the batch's commands pipelined over its connections, so that 10,000 take a second
    /// or two rather than 10,000 round trips. Each holds one descriptor of this process (limit 20,000).
    static func members(_ count: Int, of subject: String, port: Int) throws -> [LineClient] {
        var members: [LineClient] = []
        members.reserveCapacity(count)
        while members.count < count {
            let batch = try (0..<min(500, count - members.count)).map { _ in try LineClient(port: port, timeout: 30) }
            for client in batch {
                let greeting = try client.readLine()
                guard greeting.hasPrefix("+HELLO ") else { throw TestFailure("bad greeting: \(greeting)") }
                try client.sendLine("SUB \(subject)")
            }
            for client in batch {
                let reply = try client.readLine()
                guard reply == "+OK 1" else { throw TestFailure("SUB \(subject) answered \(reply)") }
            }
            members += batch
        }
        return members
    }

    /// A `MSG $presence.<subject> <seq> <payload>` line as its seq and event; nil for any other line.
    static func event(_ line: String) -> (seq: UInt64, event: PresenceEvent)? {
        let words = line.split(separator: " ", maxSplits: 3)
        guard words.count == 4, words[0] == "MSG", words[1].hasPrefix(PresenceText.subjectPrefix),
              let seq = UInt64(words[2]), let event = PresenceEvent(parsing: words[3]) else { return nil }
        return (seq, event)
    }
}

/// A client on plain TCP that sends `PING <n>` and waits for its `+PONG <n>`, 1 ms apart, on a thread of its
/// own from `start()` to `stop()`. Each PING's wait is timed twice: by the wall clock, and as the CPU time the
/// server's loop thread (its main thread) spent meanwhile, read from /proc. The second is what the wait would
/// be on a machine of its own; on this shared two-core machine, other programs' time is in the first. Worst
/// case: one pair of numbers per PING, at most 1,000 a second.
final class PingingBystander: @unchecked Sendable {
    private let client: LineClient
    private let pid: Int32
    private let lock = NSLock()
    private var stopped = false
    private var walls: [Double] = []
    private var loops: [Double] = []
    private var failure: String?
    private let done = DispatchSemaphore(value: 0)
    private let first = DispatchSemaphore(value: 0)

    /// What the bystander measured, in milliseconds.
    struct Pings: CustomStringConvertible {
        let walls: [Double]
        let loops: [Double]
        let failure: String?

        var count: Int { walls.count }
        var wallP99: Double { Self.p99(walls) }
        var loopP99: Double { Self.p99(loops) }

        static func p99(_ values: [Double]) -> Double {
            guard !values.isEmpty else { return .infinity }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        }

        var description: String {
            let shown = { (value: Double) in String(format: "%.1f", value) }
            return "\(count) PINGs, wall p99 \(shown(wallP99)) ms max \(shown(walls.max() ?? .infinity)) ms, "
                + "loop p99 \(shown(loopP99)) ms max \(shown(loops.max() ?? .infinity)) ms"
                + (failure.map { ", failed: \($0)" } ?? "")
        }
    }

    init(daemon: Daemon) throws {
        client = try daemon.client(timeout: 30)
        client.setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        pid = daemon.pid
    }

    /// Starts pinging, and returns once the first PONG came.
    func start() throws {
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            var n = 0
            // Bounded by stop(), or two minutes.
            let started = ContinuousClock.now
            while !lock.withLock({ stopped }) && ContinuousClock.now - started < .seconds(120) {
                n += 1
                let loopBefore = loopNanoseconds()
                let sent = ContinuousClock.now
                do {
                    let reply = try client.command("PING \(n)")
                    guard reply == "+PONG \(n)" else { throw TestFailure("PING \(n) answered \(reply)") }
                } catch {
                    lock.withLock { failure = "\(error)" }
                    first.signal()
                    return
                }
                let wall = Double((ContinuousClock.now - sent) / .microseconds(1)) / 1000
                let loop = Double(loopNanoseconds() - loopBefore) / 1_000_000
                lock.withLock {
                    walls.append(wall)
                    loops.append(loop)
                }
                if n == 1 { first.signal() }
                usleep(1000)
            }
        }
        guard first.wait(timeout: .now() + 30) == .success else { throw TestFailure("no first PONG in 30 s") }
    }

    /// Stops pinging and returns the PINGs timed since `start()`.
    func stop() throws -> Pings {
        lock.withLock { stopped = true }
        guard done.wait(timeout: .now() + 40) == .success else { throw TestFailure("the bystander did not stop") }
        return lock.withLock { Pings(walls: walls, loops: loops, failure: failure) }
    }

    /// The CPU time of the server's loop thread so far (the first field of its schedstat).
    private func loopNanoseconds() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/schedstat", encoding: .utf8),
              let field = text.split(separator: " ").first, let value = Int64(field) else { return 0 }
        return value
    }
}
