import Foundation
import Testing

@Suite("Server-Sent Events", .threadPerTest, .timeLimit(.minutes(2)))
struct EventStreamTests {
    /// A stream of a concrete subject and a pattern gets JSON events with resumable ids; `curl -N` with the
    /// last id as Last-Event-ID after a drop gets what was published meanwhile exactly once, then live ones.
    @Test func resumesExactlyOnceWithLastEventID() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("history.yaml")])
        let port = try daemon.httpPort()
        let query = "subject=orders.x&subject=news.%3E"
        let first = try eventStream(port: port, query: query)
        _ = try first.stdout.waitForLine(containing: ": +OK 2", timeout: 10)
        let publisher = try daemon.client()
        #expect(try publisher.command("PUB orders.x one") == "+OK 1")
        #expect(try publisher.command("PUB news.uk two") == "+OK 1")
        _ = try first.stdout.waitForLine(containing: #""payload":"two""#, timeout: 10)
        let lines = first.stdout.all
        #expect(lines.contains(#"data: {"subject":"orders.x","seq":1,"payload":"one"}"#), "\(lines)")
        let lastID = try #require(lines.last { $0.hasPrefix("id: ") }).dropFirst(4)
        #expect(lastID.hasSuffix(":1"), "one position, for orders.x: \(lastID)")
        kill(first.process.processIdentifier, SIGKILL)
        _ = first.finish(timeout: 10)
        try eventually("the stream has left") { try publisher.command("CHANNELS orders.x").contains("orders.x=0") || publisher.command("CHANNELS orders.x") == "+OK 0" }

        #expect(try publisher.command("PUB orders.x three") == "+OK 0")
        #expect(try publisher.command("PUB orders.x four") == "+OK 0")
        let second = try eventStream(port: port, query: query, headers: ["Last-Event-ID: \(lastID)"])
        _ = try second.stdout.waitForLine(containing: ": +OK 2", timeout: 10)
        #expect(try publisher.command("PUB orders.x five") == "+OK 1")
        _ = try second.stdout.waitForLine(containing: #""payload":"five""#, timeout: 10)
        let payloads = second.stdout.all.filter { $0.hasPrefix("data: ") }
        #expect(payloads == [
            #"data: {"subject":"orders.x","seq":2,"payload":"three"}"#,
            #"data: {"subject":"orders.x","seq":3,"payload":"four"}"#,
            #"data: {"subject":"orders.x","seq":4,"payload":"five"}"#,
        ], "each missed message once, then the live one")
        #expect(second.stdout.all.contains(#"id: \#(lastID.split(separator: ":")[0]):4"#))
    }

    /// `?token=` authenticates an EventSource; a refused subject is 403; the token never reaches the log.
    /// Event streams that never read, on the subject a publisher floods: each message's event is encoded once
    /// for all of them, so the loop stays responsive (the report: 50 stalled streams, 20,000 PUBs of 1 KB,
    /// another client's PING p99 157 ms) and every stream that reads gets the same events.
    @Test func stalledStreamsShareTheEncodingAndKeepTheLoopResponsive() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let port = try daemon.httpPort()
        var stalled: [LineClient] = []
        for _ in 0..<50 {
            let client = try LineClient(port: port, timeout: 30, receiveBuffer: 4096)
            try client.send("GET /events?subject=s.x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            stalled.append(client)
        }
        let reading = try eventStream(port: port, query: "subject=s.x")
        _ = try reading.stdout.waitForLine(containing: ": +OK 1", timeout: 10)
        let observer = try daemon.client()
        try eventually(timeout: 10, "every stream subscribed") {
            try observer.command("CHANNELS s.x") == "+OK 1 s.x=51"
        }
        let publisher = try daemon.client(timeout: 60)
        let payload = String(repeating: "e", count: 1000)
        let pinger = Pinger(observer)
        for batch in 0..<20 {
            try publisher.send((0..<1000).map { "PUB s.x \(batch)-\($0) \(payload)\n" }.joined())
            for _ in 0..<1000 { _ = try publisher.readLine() }
        }
        let worst = pinger.stop()
        print("stalled event streams: slowest PING \(worst) s")
        #expect(worst < 0.25, "the slowest PING took \(worst) s")
        _ = try reading.stdout.waitForLine(containing: #""payload":"19-999"#, timeout: 30)
        let events = reading.stdout.all.filter { $0.hasPrefix("data: ") }
        #expect(events.count == 20_000)
        #expect(events.first == #"data: {"subject":"s.x","seq":1,"payload":"0-0 \#(payload)"}"#)
        let epoch = try #require(infoFields(try observer.command("INFO"))["epoch"])
        #expect(reading.stdout.all.contains("id: \(epoch):20000"))
        kill(reading.process.processIdentifier, SIGKILL)
        for client in stalled { client.close() }
    }

    @Test func queryTokenIsCheckedAndNeverLogged() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("auth.yaml"),
                                            "--log-level", "debug"])
        let port = try daemon.httpPort()
        let denied = try curl(["http://127.0.0.1:\(port)/events?subject=sensors.secret.x&token=reader-secret-token"])
        #expect(denied.status == 403 && denied.body.joined().contains(#""error":"denied""#), "\(denied)")
        let anonymous = try curl(["http://127.0.0.1:\(port)/events?subject=a"])
        #expect(anonymous.status == 401)
        let stream = try eventStream(port: port, query: "subject=sensors.a&token=reader-secret-token")
        _ = try stream.stdout.waitForLine(containing: ": +OK 1 epoch=", timeout: 10)
        let publisher = try daemon.client()
        #expect(try publisher.command("AUTH sensor-secret-token") == "+OK")
        #expect(try publisher.command("PUB sensors.a 21.5") == "+OK 1")
        _ = try stream.stdout.waitForLine(containing: #""payload":"21.5""#, timeout: 10)
        #expect(try publisher.command("QUIT") == "+OK bye")
        #expect(!daemon.stderr.all.contains { $0.contains("reader-secret-token") || $0.contains("token=") })
    }

    /// What one stream may ask is bounded: 64 subjects in all and 16 concrete (resumable) ones.
    @Test func streamsNameABoundedNumberOfSubjects() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let port = try daemon.httpPort()
        let many = (0..<65).map { "subject=p\($0).%3E" }.joined(separator: "&")
        let tooMany = try curl(["http://127.0.0.1:\(port)/events?\(many)"])
        #expect(tooMany.status == 400 && tooMany.body.joined().contains(#""error":"syntax""#), "\(tooMany)")
        let concrete = (0..<17).map { "subject=c\($0)" }.joined(separator: "&")
        let tooManyConcrete = try curl(["http://127.0.0.1:\(port)/events?\(concrete)"])
        #expect(tooManyConcrete.status == 400 && tooManyConcrete.body.joined().contains(#""error":"limit""#))
        let none = try curl(["http://127.0.0.1:\(port)/events"])
        #expect(none.status == 400)
    }
}

/// Another client's PING every 10 ms on a thread of its own, until `stop`, which returns the slowest round trip.
private final class Pinger: @unchecked Sendable {
    private let lock = NSLock()
    private var worst = 0.0
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)

    init(_ client: LineClient) {
        Thread.detachNewThread { [self] in
            while !lock.withLock({ stopping }) {
                let started = Date()
                guard (try? client.command("PING")) == "+PONG" else { break }
                let took = Date().timeIntervalSince(started)
                lock.withLock { worst = max(worst, took) }
                usleep(10_000)
            }
            finished.signal()
        }
    }

    func stop() -> Double {
        lock.withLock { stopping = true }
        finished.wait()
        return lock.withLock { worst }
    }
}
