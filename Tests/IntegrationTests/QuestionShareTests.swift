import Foundation
import Testing

/// The open questions are shared fairly: no connection holds more of them than the pool has left free, so
/// connections that flood ASKs never take the whole of `max_open_questions` and a bystander can still ask.
@Suite("Open questions are shared fairly", .threadPerTest, .timeLimit(.minutes(2)))
struct QuestionShareTests {
    /// The report, scaled down: 3 connections ask 60 questions each (180, over a pool of 100) of a subscriber
    /// that never answers. Each stops at its fair share, refused with `-ERR limit`; the pool keeps room, and
    /// a bystander's ASK is taken and put to the subscriber.
    @Test func aBystanderCanAskWhileOthersFlood() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_OPEN_QUESTIONS": "100", "FANOUTD_MAX_ASKS": "50"])
        let silent = try daemon.client()
        #expect(try silent.command("SUB q.x") == "+OK 1")
        var taken = 0
        var refused = 0
        var floods: [LineClient] = []
        for _ in 0..<3 {
            let flood = try daemon.client()
            try flood.send((0..<60).map { "ASK q.x 60000 0 flood-\($0)\n" }.joined())
            for _ in 0..<60 {
                let reply = try flood.readLine()
                if reply.hasPrefix("+OK ") {
                    taken += 1
                } else {
                    #expect(reply.hasPrefix("-ERR limit "), "\(reply)")
                    refused += 1
                }
            }
            floods.append(flood)
        }
        #expect(taken + refused == 180)
        #expect(taken < 100, "the flooders left room in the pool: \(taken) taken")
        #expect(refused > 0)

        let bystander = try daemon.client()
        let reply = try bystander.command("ASK q.x 60000 0 may-i")
        let words = reply.split(separator: " ")
        #expect(words.count == 3 && words[0] == "+OK" && words[2] == "1", "the bystander is served: \(reply)")
        #expect(try bystander.command("PING") == "+PONG")
        // The subscriber got it and can answer it: the bystander hears the answer and then DONE.
        var id = ""
        while true {
            let push = try silent.readLine()
            if push.hasSuffix(" may-i") {
                id = String(push.split(separator: " ")[2])
                break
            }
        }
        #expect(try silent.command("ANSWER \(id) yes") == "+OK 1")
        #expect(try bystander.readLine().hasPrefix("ANSWER \(id) "))
        #expect(try bystander.readLine() == "DONE \(id) asked=1 answered=1 gone=0")
        for flood in floods { flood.close() }
    }

    /// One user's connections share one share: six connections of one user, taking turns to ask all they can,
    /// would each take half of what is left and together the whole pool; they stop at half of it, and another
    /// user can still ask.
    @Test func oneUsersConnectionsTogetherStopAtHalfThePool() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("auth.yaml")],
                                environment: ["FANOUTD_MAX_OPEN_QUESTIONS": "100", "FANOUTD_MAX_ASKS": "50"])
        let receiver = try daemon.client()
        #expect(try receiver.command("AUTH reader-secret-token").hasPrefix("+OK"))
        #expect(try receiver.command("SUB sensors.q") == "+OK 1")
        var taken = 0
        var askers: [LineClient] = []
        for _ in 0..<6 {
            let asker = try daemon.client()
            #expect(try asker.command("AUTH sensor-secret-token").hasPrefix("+OK"))
            try asker.send((0..<50).map { "ASK sensors.q 60000 0 turn-\($0)\n" }.joined())
            for _ in 0..<50 {
                let reply = try asker.readLine()
                if reply.hasPrefix("+OK ") { taken += 1 } else { #expect(reply.hasPrefix("-ERR limit "), "\(reply)") }
            }
            askers.append(asker)
        }
        #expect(taken == 50, "one user took \(taken) of a pool of 100")
        let other = try daemon.client()
        #expect(try other.command("AUTH reader-secret-token").hasPrefix("+OK"))
        let reply = try other.command("ASK sensors.q 60000 0 another-user")
        #expect(reply.hasPrefix("+OK ") || reply.hasPrefix("-ERR denied"), "\(reply)")
        if reply.hasPrefix("-ERR denied") {
            // The reader may not publish: the pool's room shows in INFO instead.
            #expect(infoFields(try other.command("INFO"))["open_questions"] == "50")
        }
    }
}
