import Foundation
import Testing

@Suite("Server-Sent Events", .timeLimit(.minutes(2)))
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
