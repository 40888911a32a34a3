import Foundation
import Testing

@Suite("HTTP publish", .threadPerTest, .timeLimit(.minutes(2)))
struct HTTPPublishTests {
    /// The body is the payload; the answer counts receivers and names the seq; errors carry the protocol's code.
    @Test func publishAndItsErrors() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"],
                                environment: ["FANOUTD_MAX_LINE": "512", "FANOUTD_MAX_PAYLOAD": "1024"])
        let port = try daemon.httpPort()
        let subscriber = try daemon.client()
        #expect(try subscriber.command("SUB news.*") == "+OK 1")
        let url = "http://127.0.0.1:\(port)/publish/news.uk"
        let first = try curl(["-X", "POST", "--data-binary", "hello from curl", url])
        #expect(first.status == 200 && first.body == [#"{"receivers":1,"seq":1}"#], "\(first)")
        #expect(try subscriber.readLine() == "MSG news.uk 1 hello from curl")
        #expect(try curl(["-X", "POST", "--data-binary", "again", url]).body == [#"{"receivers":1,"seq":2}"#])
        #expect(try subscriber.readLine() == "MSG news.uk 2 again")

        let badSubject = try curl(["-X", "POST", "-d", "x", "http://127.0.0.1:\(port)/publish/news..uk"])
        #expect(badSubject.status == 400 && badSubject.body.joined().contains(#""error":"bad-subject""#), "\(badSubject)")
        // Any bytes (1.2): a body a line cannot carry is published as BPUB and pushed as BMSG.
        let twoLines = try curl(["-X", "POST", "--data-binary", "a\nb", url])
        #expect(twoLines.status == 200 && twoLines.body == [#"{"receivers":1,"seq":3}"#], "\(twoLines)")
        #expect(try subscriber.readLine() == "BMSG news.uk 3 3")
        #expect(try subscriber.readLine() == "a")
        #expect(try subscriber.readLine() == "b")
        let longerThanALine = try curl(["-X", "POST", "--data-binary", String(repeating: "y", count: 600), url])
        #expect(longerThanALine.status == 200, "\(longerThanALine)")
        #expect(try subscriber.readLine() == "BMSG news.uk 4 600")
        #expect(try subscriber.readLine() == String(repeating: "y", count: 600))
        let tooLong = try curl(["-X", "POST", "--data-binary", String(repeating: "x", count: 1100), url])
        #expect(tooLong.status == 413 && tooLong.body.joined().contains(#""error":"too-long""#), "\(tooLong)")
        let get = try curl([url])
        #expect(get.status == 405)
        #expect(try subscriber.command("PING") == "+PONG", "nothing else reached the subscriber")
    }

    /// Bearer tokens: none is 401 auth-required, a wrong one 401 denied, a subject outside the user's
    /// permissions 403 denied.
    @Test func bearerTokens() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("auth.yaml")])
        let port = try daemon.httpPort()
        let url = "http://127.0.0.1:\(port)/publish/sensors.a"
        let anonymous = try curl(["-X", "POST", "-d", "1", url])
        #expect(anonymous.status == 401 && anonymous.body.joined().contains(#""error":"auth-required""#), "\(anonymous)")
        let wrong = try curl(["-X", "POST", "-d", "1", "-H", "Authorization: Bearer not-a-token-at-all", url])
        #expect(wrong.status == 401 && wrong.body.joined().contains(#""error":"denied""#), "\(wrong)")
        let allowed = try curl(["-X", "POST", "-d", "1", "-H", "Authorization: Bearer sensor-secret-token", url])
        #expect(allowed.status == 200 && allowed.body == [#"{"receivers":0,"seq":1}"#], "\(allowed)")
        let elsewhere = try curl(["-X", "POST", "-d", "1", "-H", "Authorization: Bearer sensor-secret-token",
                                  "http://127.0.0.1:\(port)/publish/orders.a"])
        #expect(elsewhere.status == 403 && elsewhere.body.joined().contains(#""error":"denied""#), "\(elsewhere)")
    }
}
