import Foundation
import Testing

/// One HTTP answer read off a raw socket: the status, the headers (names lower-cased) and, for an answer that
/// closes, the body.
private struct Answer {
    let status: Int
    let headers: [String: String]
    let body: String
}

/// Sends `request` as it stands and reads the answer's head, then the body until the server closes (not for
/// an event stream, whose body runs on).
private func send(_ request: String, port: Int, readBody: Bool = true) throws -> Answer {
    let client = try LineClient(port: port)
    try client.send(request)
    let statusLine = try client.readLine()
    guard let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
        throw TestFailure("no status in \(statusLine)")
    }
    var headers: [String: String] = [:]
    while true {
        let line = try client.readLine().trimmingCharacters(in: .whitespacesAndNewlines)
        if line.isEmpty { break }
        let parts = line.split(separator: ":", maxSplits: 1)
        headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
    }
    let body = readBody ? try client.readUntilClosed().joined(separator: "\n") : ""
    return Answer(status: status, headers: headers, body: body)
}

private func upgrade(origin: String) -> String {
    "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: \(origin)\r\n\r\n"
}

private func stream(origin: String, port: Int) -> String {
    "GET /events?subject=page.feed HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: \(origin)\r\n\r\n"
}

private func publish(_ payload: String, origin: String, port: Int, subject: String = "page.feed") -> String {
    "POST /publish/\(subject) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: \(origin)\r\n"
        + "Content-Type: text/plain\r\nContent-Length: \(payload.utf8.count)\r\n\r\n\(payload)"
}

@Suite("Origins and CORS on the HTTP listener", .threadPerTest, .timeLimit(.minutes(2)))
struct OriginTests {
    /// A foreign page is refused with 403 `denied`, naming http_allowed_origins, on the WebSocket, the event
    /// stream and the publish alike, before anything happens: its publish reaches no subscriber. The listener's
    /// own pages and loopback pages pass by default, and programs (no Origin) always do.
    @Test func theDefaultRefusesForeignPagesOnEveryBrowserRoute() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let port = try daemon.httpPort()
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB page.feed") == "+OK 1")
        let hostile = ["http://evil.example", "http://192.0.2.1:\(port)", "null", "https://user@127.0.0.1",
                       "http://127.0.0.1:\(port)/path", "http://l\u{F6}calhost", "http://[::1",
                       "http://127.0.0.1:\(port)@evil.example", "http://" + String(repeating: "a", count: 4000)]
        for origin in hostile {
            for request in [upgrade(origin: origin), stream(origin: origin, port: port),
                            publish("from \(origin)", origin: origin, port: port)] {
                let answer = try send(request, port: port)
                #expect(answer.status == 403, "\(origin.prefix(40)): \(request.prefix(20))")
                #expect(answer.body.contains("\"error\":\"denied\"") && answer.body.contains("http_allowed_origins"),
                        "\(answer.body)")
                #expect(answer.headers["access-control-allow-origin"] == nil)
            }
        }
        // Nothing the refused pages sent was published: the first message the subscriber sees is this one.
        let publisher = try daemon.client()
        #expect(try publisher.command("PUB page.feed marker") == "+OK 1")
        #expect(try subscriber.readLine() == "MSG page.feed 1 marker")

        let own = "http://127.0.0.1:\(port)"
        let accepted = try send(publish("own page", origin: own, port: port), port: port)
        #expect(accepted.status == 200 && accepted.body.contains("\"receivers\":1"), "\(accepted)")
        #expect(accepted.headers["access-control-allow-origin"] == own && accepted.headers["vary"] == "Origin")
        #expect(try subscriber.readLine() == "MSG page.feed 2 own page")
        let loopback = try send(stream(origin: "http://localhost:5173", port: port), port: port, readBody: false)
        #expect(loopback.status == 200 && loopback.headers["access-control-allow-origin"] == "http://localhost:5173")
        let upgraded = try send(upgrade(origin: "http://[::1]:8080"), port: port, readBody: false)
        #expect(upgraded.status == 101 && upgraded.headers["access-control-allow-origin"] == nil)
        let program = try send("POST /publish/page.feed HTTP/1.1\r\nContent-Length: 7\r\n\r\nprogram", port: port)
        #expect(program.status == 200 && program.headers["access-control-allow-origin"] == nil)
        #expect(try subscriber.readLine() == "MSG page.feed 3 program")
    }

    /// With a list, exactly its origins pass; a preflight from one is answered 204 with the method and the
    /// headers its route reads, never with credentials, and from any other page with 403. Errors to an allowed
    /// page carry the CORS header, so that the page can read them.
    @Test func listedOriginsGetCORSAndPreflights() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"],
                                environment: ["FANOUTD_HTTP_ALLOWED_ORIGINS": "https://app.example"])
        let port = try daemon.httpPort()
        func preflight(_ path: String, origin: String) throws -> Answer {
            try send("OPTIONS \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: \(origin)\r\n"
                     + "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization\r\n\r\n",
                     port: port)
        }
        let publishing = try preflight("/publish/page.feed", origin: "https://app.example")
        #expect(publishing.status == 204)
        #expect(publishing.headers["access-control-allow-origin"] == "https://app.example")
        #expect(publishing.headers["vary"] == "Origin")
        #expect(publishing.headers["access-control-allow-methods"] == "POST")
        #expect(publishing.headers["access-control-allow-headers"] == "Authorization, Content-Type")
        #expect(publishing.headers["access-control-max-age"] == "600")
        #expect(publishing.headers["access-control-allow-credentials"] == nil)
        #expect(publishing.headers["content-length"] == nil && publishing.body.isEmpty, "204 has no body")
        let streaming = try preflight("/events", origin: "https://app.example")
        #expect(streaming.status == 204 && streaming.headers["access-control-allow-methods"] == "GET, HEAD")
        #expect(streaming.headers["access-control-allow-headers"] == "Authorization, Content-Type, Last-Event-ID")
        let others = ["https://evil.example", "http://app.example", "http://127.0.0.1:\(port)", "http://localhost:3000"]
        for origin in others {
            let refused = try preflight("/publish/page.feed", origin: origin)
            #expect(refused.status == 403 && refused.headers["access-control-allow-origin"] == nil, "\(origin)")
            #expect(try send(stream(origin: origin, port: port), port: port).status == 403, "\(origin)")
        }

        let error = try send(publish("x", origin: "https://app.example", port: port, subject: ""), port: port)
        #expect(error.status == 400 && error.body.contains("bad-subject"))
        #expect(error.headers["access-control-allow-origin"] == "https://app.example", "the page can read the error")
        let opened = try send(stream(origin: "https://app.example", port: port), port: port, readBody: false)
        #expect(opened.status == 200 && opened.headers["access-control-allow-origin"] == "https://app.example")
        #expect(opened.headers["content-type"] == "text/event-stream; charset=utf-8")
    }

    /// An entry that is no origin (a bare host, a path) is a configuration error, not a rule that never matches.
    @Test func entriesThatAreNoOriginAreRefusedAtStartup() throws {
        let variable = "FANOUTD_HTTP_ALLOWED_ORIGINS"
        let checked = try runDaemon(["--check-config"], environment: [variable: "https://app.example,app.example.com"])
        #expect(checked.status != 0, "\(checked.stderr)")
        let problem = "http_allowed_origins: 'app.example.com' is not an origin"
        #expect(checked.stderr.contains(problem), "\(checked.stderr)")
        let fine = try runDaemon(["--check-config"], environment: [variable: "https://*.example.com,null"])
        #expect(fine.status == 0, "\(fine.stderr)")
    }
}
