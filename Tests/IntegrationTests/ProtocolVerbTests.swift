import Foundation
import Testing

@Suite("Protocol verbs over TCP", .threadPerTest, .timeLimit(.minutes(3)))
struct ProtocolVerbTests {
    @Test func greetingAndEveryVerb() throws {
        let daemon = try Daemon(environment: ["FANOUTD_SERVER_NAME": "test-host"])
        let client = try LineClient(port: daemon.port)
        let greeting = try client.readLine()
        #expect(greeting.wholeMatch(of: #/\+HELLO fanout/1 test-host auth=none epoch=[A-Za-z0-9_.-]{1,64}/#) != nil,
                "\(greeting)")

        #expect(try client.command("PING") == "+PONG")
        #expect(try client.command("ping hello there") == "+PONG hello there")
        #expect(try client.command("HELP") == "+OK SUB UNSUB PUB PING QUIT HELP INFO CHANNELS CLIENTS AUTH RESUME LAST QSUB ASK ANSWER BPUB WHO KICK")
        #expect(try client.command("SUB news.* sport") == "+OK 2")
        #expect(try client.command("SUB news.*") == "+OK 2", "subscribing twice is a no-op")
        #expect(try client.command("CHANNELS") == "+OK 2 news.*=1 sport=1")
        #expect(try client.command("CHANNELS news.>") == "+OK 1 news.*=1")
        #expect(try client.command("UNSUB sport nothing.here") == "+OK 1")
        #expect(try client.command("UNSUB") == "+OK 0")
        #expect(try client.command("PUB nobody.listens hi") == "+OK 0")
        #expect(try client.command("AUTH whatever").hasPrefix("+OK"))

        let info = infoFields(try client.command("INFO"))
        for key in ["version", "uptime_s", "clients", "subjects", "subscriptions", "published", "delivered", "slow_consumers"] {
            #expect(info[key] != nil, "INFO has \(key)")
        }
        #expect(info["clients"] == "1")
        #expect(info["published"] == "1")
        #expect(info["subscriptions"] == "0")

        let clients = try client.command("CLIENTS")
        #expect(clients.hasPrefix("+OK 1 id=1,addr=127.0.0.1:"))
        #expect(clients.contains(",subs=0,pending="))
        #expect(clients.contains(",age_s="))

        #expect(try client.command("QUIT") == "+OK bye")
        #expect(try client.readLineOrEOF() == nil, "QUIT closes the connection")
    }

    @Test(arguments: [
        ("NOPE", "-ERR unknown-command"),
        ("SUB", "-ERR syntax"),
        ("PUB", "-ERR syntax"),
        ("QUIT please", "-ERR syntax"),
        ("CHANNELS a b", "-ERR syntax"),
        ("PUB news.* hi", "-ERR bad-subject"),
        ("SUB a..b", "-ERR bad-subject"),
        ("SUB a.>.b", "-ERR bad-subject"),
        ("UNSUB .a", "-ERR bad-subject"),
    ])
    func errorCodes(line: String, prefix: String) throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        let reply = try client.command(line)
        #expect(reply.hasPrefix(prefix + " "), "\(line) -> \(reply)")
        #expect(try client.command("PING") == "+PONG", "the connection stays usable")
    }

    @Test func crlfAndCaseInsensitiveVerbs() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        try client.send("pInG crlf\r\n\r\n\nSuB a\r\n")
        #expect(try client.readLine() == "+PONG crlf")
        #expect(try client.readLine() == "+OK 1", "empty lines get no reply")
    }

    @Test func subscriptionLimit() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_SUBSCRIPTIONS": "3"])
        let client = try daemon.client()
        #expect(try client.command("SUB a b") == "+OK 2")
        #expect(try client.command("SUB c d").hasPrefix("-ERR limit "))
        #expect(try client.command("SUB c") == "+OK 3", "a refused SUB adds nothing")
        #expect(try client.command("SUB a") == "+OK 3", "re-subscribing is not counted against the limit")
    }

    @Test func connectionLimit() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_CONNECTIONS": "2"])
        let first = try daemon.client()
        let second = try daemon.client()
        let third = try LineClient(port: daemon.port)
        let refusal = try third.readLine()
        #expect(refusal.hasPrefix("-ERR limit "))
        #expect(try third.readLineOrEOF() == nil, "the refused connection is closed")
        #expect(try first.command("PING") == "+PONG")
        second.close()
        // Once a slot is free, a new connection is served.
        try eventually("a slot frees up") {
            let fields = infoFields(try first.command("INFO"))
            return fields["clients"] == "1"
        }
        let fourth = try daemon.client()
        #expect(try fourth.command("PING") == "+PONG")
    }

    @Test func overlongLineIsRefusedAndTheConnectionSurvives() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        try client.send("PUB a " + String(repeating: "x", count: 70_000) + "\n")
        let reply = try client.readLine()
        #expect(reply.hasPrefix("-ERR too-long "))
        #expect(try client.command("PING after") == "+PONG after")
        // A line of exactly max_line bytes is fine.
        let payload = String(repeating: "y", count: 65_536 - "PUB a ".utf8.count)
        #expect(try client.command("PUB a " + payload) == "+OK 0")
    }
}
