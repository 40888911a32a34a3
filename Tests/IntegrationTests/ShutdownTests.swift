import Foundation
import Testing

/// Closing without waiting out the grace: a connection's fd is freed once its last line is safe (flushed,
/// half-closed and acknowledged by the peer's kernel), and `shutdown_grace` only bounds peers that don't read.
@Suite("Shutdown and graceful close", .threadPerTest, .timeLimit(.minutes(3)))
struct ShutdownTests {
    @Test func sigtermWithManyIdleClientsThatKeepTheirEndOpenExitsAtOnce() throws {
        let count = 500
        // Both ends of every connection may be counted against this process's limit while tests run in parallel.
        try raiseOpenFileLimit(to: count + 2048)
        let daemon = try Daemon()
        // Each client reads its greeting, then stays idle with its end open, as `nc` does with stdin open.
        let clients = try (0..<count).map { _ in try daemon.client() }
        let observer = try daemon.client()
        #expect(infoFields(try observer.command("INFO"))["clients"] == String(count + 1))

        let started = ContinuousClock.now
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(timeout: 15)
        let elapsed = ContinuousClock.now - started
        #expect(status == 0)
        #expect(elapsed < .seconds(1), "exited \(elapsed) after SIGTERM; the default grace is 5 s")

        var farewells = 0
        for client in clients {
            let lines = try client.readUntilClosed()
            if lines.count == 1 && lines[0].hasPrefix("-ERR shutting-down ") { farewells += 1 }
        }
        #expect(farewells == count, "every idle client got -ERR shutting-down and then the server's FIN")
    }

    @Test func aPeerThatDoesNotReadHoldsTheExitForTheGraceAndNoLonger() throws {
        let grace = 1.0
        let daemon = try Daemon(environment: ["FANOUTD_SHUTDOWN_GRACE": "1"])
        // Subscribes, then never reads: with a small receive buffer, the publishes below stay queued.
        let stalled = try LineClient(port: daemon.port, receiveBuffer: 4096)
        try stalled.sendLine("SUB s")
        let publisher = try daemon.client()
        try eventually("subscribed") { try publisher.command("PUB s x") == "+OK 1" }
        let payload = String(repeating: "w", count: 1000)
        try publisher.send(String(repeating: "PUB s \(payload)\n", count: 3000))
        for _ in 0..<3000 { #expect(try publisher.readLine() == "+OK 1") }
        #expect(try pendingBytes(ofOtherClientsSeenBy: publisher) > 0, "output is queued for the stalled peer")

        let started = ContinuousClock.now
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(timeout: 15)
        let elapsed = ContinuousClock.now - started
        #expect(status == 0)
        #expect(elapsed >= .seconds(grace - 0.1), "held for the grace: exited after \(elapsed)")
        #expect(elapsed < .seconds(grace + 1), "and no longer: exited after \(elapsed)")
        withExtendedLifetime(stalled) {}
    }

    @Test func quitFreesTheServersSocketWhileTheClientKeepsItsOpen() throws {
        // The default grace (5 s) is well past the deadline below: lingering until it would fail the test.
        let daemon = try Daemon()
        let observer = try daemon.client()
        let baseline = try openDescriptors(of: daemon)
        let quitter = try daemon.client()
        try eventually("the server holds the new connection") { try openDescriptors(of: daemon) == baseline + 1 }

        #expect(try quitter.command("QUIT") == "+OK bye")
        #expect(try quitter.readLineOrEOF() == nil, "the server half-closed after its last line")
        // The client never closes its end; the server's fd must still go once the reply is acknowledged.
        try eventually(timeout: 2, "the server closed its socket") { try openDescriptors(of: daemon) == baseline }
        #expect(try observer.command("PING") == "+PONG")
        withExtendedLifetime(quitter) {}
    }

    @Test func quitOverAUnixSocketFreesTheServersSocket() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let daemon = try Daemon(listen: ["127.0.0.1:0", "unix:\(path)"])
        let baseline = try openDescriptors(of: daemon)
        let quitter = try LineClient(unixPath: path)
        #expect(try quitter.readLine().hasPrefix("+HELLO fanout/1 "))
        try eventually("the server holds the new connection") { try openDescriptors(of: daemon) == baseline + 1 }

        #expect(try quitter.command("QUIT") == "+OK bye")
        #expect(try quitter.readLineOrEOF() == nil)
        try eventually(timeout: 2, "the server closed its socket") { try openDescriptors(of: daemon) == baseline }
        withExtendedLifetime(quitter) {}
    }

    @Test func aUnixClientThatHasNotReadItsFarewellYetDoesNotHoldTheExit() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let daemon = try Daemon(listen: ["127.0.0.1:0", "unix:\(path)"])
        let idle = try LineClient(unixPath: path)
        #expect(try idle.readLine().hasPrefix("+HELLO fanout/1 "))
        #expect(try idle.command("SUB a") == "+OK 1")

        // The farewell sits unread in the client's receive queue while the daemon exits; closing the server's
        // end does not take it away.
        let started = ContinuousClock.now
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(timeout: 15)
        let elapsed = ContinuousClock.now - started
        #expect(status == 0)
        #expect(elapsed < .seconds(1), "exited \(elapsed) after SIGTERM; the default grace is 5 s")
        #expect(try idle.readLine().hasPrefix("-ERR shutting-down "))
        #expect(try idle.readLineOrEOF() == nil)
    }
}

/// A new directory for a unix socket file; the caller removes it.
private func temporaryDirectory() throws -> URL {
    let name = "fanout-shutdown-\(UUID().uuidString)"
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(name)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// The daemon's open file descriptors, from /proc.
private func openDescriptors(of daemon: Daemon) throws -> Int {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count
}

/// The largest `pending=` byte count that CLIENTS reports for connections other than `client` itself.
private func pendingBytes(ofOtherClientsSeenBy client: LineClient) throws -> Int {
    let reply = try client.command("CLIENTS")
    let pending = reply.split(separator: " ").dropFirst(2).compactMap { entry -> Int? in
        let fields = entry.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1) }
        return fields.first { $0.first == "pending" }.flatMap { $0.count == 2 ? Int($0[1]) : nil }
    }
    return pending.max() ?? 0
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
